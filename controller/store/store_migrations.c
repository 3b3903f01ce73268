/* The store's schema as an ordered list of migrations; each step runs in its own transaction
 * and sets PRAGMA user_version. Append new steps; never edit a released one. */
#include "controller/store/store_int.h"

#include "common/util/util.h"

/* v1: clusters, nodes, enrollment tokens (hashed), audit log. */
static const char migration_v1[] =
	"CREATE TABLE clusters ("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL UNIQUE,"
	"  created_at INTEGER NOT NULL"
	");"
	"CREATE TABLE nodes ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  hostname TEXT NOT NULL,"
	"  cert_serial TEXT NOT NULL,"
	"  cert_fingerprint TEXT NOT NULL,"
	"  state TEXT NOT NULL"
	"    CHECK (state IN ('enrolled', 'online', 'offline', 'revoked')),"
	"  enrolled_at INTEGER NOT NULL,"
	"  last_seen INTEGER NOT NULL DEFAULT 0,"
	"  facts TEXT,"
	"  revoked_at INTEGER,"
	"  UNIQUE (cluster_id, hostname)"
	");"
	"CREATE TABLE enroll_tokens ("
	"  id INTEGER PRIMARY KEY,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  token_hash TEXT NOT NULL UNIQUE,"
	"  created_at INTEGER NOT NULL,"
	"  expires_at INTEGER NOT NULL,"
	"  uses_left INTEGER NOT NULL CHECK (uses_left >= 0),"
	"  uses_total INTEGER NOT NULL CHECK (uses_total >= 1)"
	");"
	"CREATE TABLE audit_log ("
	"  id INTEGER PRIMARY KEY,"
	"  at INTEGER NOT NULL,"
	"  actor TEXT NOT NULL,"
	"  action TEXT NOT NULL,"
	"  target TEXT,"
	"  outcome TEXT NOT NULL,"
	"  detail TEXT"
	");";

/* v2: a revocation list that outlives node rows (a re-enrolled hostname replaces its revoked
 * row), the agent version, and indexes for the hot queries. Serials of nodes revoked under v1
 * are carried over. */
static const char migration_v2[] =
	"CREATE TABLE revoked_certs ("
	"  serial TEXT PRIMARY KEY NOT NULL COLLATE NOCASE,"
	"  node_id TEXT NOT NULL,"
	"  revoked_at INTEGER NOT NULL"
	");"
	"INSERT OR IGNORE INTO revoked_certs (serial, node_id, revoked_at)"
	"  SELECT cert_serial, id, COALESCE(revoked_at, 0) FROM nodes WHERE state = 'revoked';"
	"ALTER TABLE nodes ADD COLUMN agent_version TEXT;"
	"CREATE INDEX nodes_hostname ON nodes (hostname);"
	"CREATE INDEX nodes_state_last_seen ON nodes (state, last_seen);"
	"CREATE INDEX enroll_tokens_cluster ON enroll_tokens (cluster_id);"
	"CREATE INDEX audit_log_at ON audit_log (at, id);";

/* v3: playbooks (by content hash), deployments with their rollout policy, the nodes of each
 * deployment with their batch and outcome, and per-step results. */
static const char migration_v3[] =
	"CREATE TABLE playbooks ("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  version TEXT NOT NULL,"
	"  sha256 TEXT NOT NULL UNIQUE,"
	"  text TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL"
	");"
	"CREATE TABLE deployments ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  playbook_id INTEGER NOT NULL REFERENCES playbooks(id),"
	"  check_mode INTEGER NOT NULL,"
	"  policy TEXT NOT NULL,"
	"  state TEXT NOT NULL"
	"    CHECK (state IN ('pending', 'running', 'succeeded', 'partial', 'failed')),"
	"  reason TEXT,"
	"  current_batch INTEGER NOT NULL DEFAULT 0,"
	"  created_at INTEGER NOT NULL,"
	"  finished_at INTEGER"
	");"
	"CREATE TABLE deployment_nodes ("
	"  deployment_id TEXT NOT NULL REFERENCES deployments(id),"
	"  node_id TEXT NOT NULL,"
	"  hostname TEXT NOT NULL,"
	"  batch INTEGER NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('waiting', 'sent', 'succeeded', 'failed',"
	"    'unreachable', 'skipped')),"
	"  ok INTEGER NOT NULL DEFAULT 0,"
	"  changed INTEGER NOT NULL DEFAULT 0,"
	"  failed INTEGER NOT NULL DEFAULT 0,"
	"  skipped INTEGER NOT NULL DEFAULT 0,"
	"  message TEXT,"
	"  sent_at INTEGER,"
	"  finished_at INTEGER,"
	"  PRIMARY KEY (deployment_id, node_id)"
	");"
	"CREATE TABLE step_results ("
	"  deployment_id TEXT NOT NULL REFERENCES deployments(id),"
	"  node_id TEXT NOT NULL,"
	"  idx INTEGER NOT NULL,"
	"  name TEXT NOT NULL,"
	"  status TEXT NOT NULL CHECK (status IN ('ok', 'changed', 'failed', 'skipped')),"
	"  diff TEXT,"
	"  message TEXT,"
	"  duration_ms INTEGER NOT NULL,"
	"  PRIMARY KEY (deployment_id, node_id, idx)"
	");"
	"CREATE INDEX deployments_state ON deployments (state);";

/* v4: benchmark runs between two nodes, ordered by `bench run` and driven by the controller. */
static const char migration_v4[] =
	"CREATE TABLE bench_runs ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  transport TEXT NOT NULL,"
	"  client_node TEXT NOT NULL,"
	"  server_node TEXT NOT NULL,"
	"  server_address TEXT,"
	"  params TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('pending', 'server_sent', 'server_ready',"
	"    'client_sent', 'succeeded', 'failed')),"
	"  server_port INTEGER,"
	"  result TEXT,"
	"  server_result TEXT,"
	"  error TEXT,"
	"  deadline_ms INTEGER NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  finished_at INTEGER"
	");"
	"CREATE INDEX bench_runs_state ON bench_runs (state);";

/* v5: a benchmark run can be cancelled: state 'cancelled', and cancel_requested_at (the
 * operator's request, which the serving controller carries out). SQLite cannot change a CHECK
 * constraint in place, so the table is rebuilt and its rows copied. */
static const char migration_v5[] =
	"CREATE TABLE bench_runs_v5 ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  transport TEXT NOT NULL,"
	"  client_node TEXT NOT NULL,"
	"  server_node TEXT NOT NULL,"
	"  server_address TEXT,"
	"  params TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('pending', 'server_sent', 'server_ready',"
	"    'client_sent', 'succeeded', 'failed', 'cancelled')),"
	"  server_port INTEGER,"
	"  result TEXT,"
	"  server_result TEXT,"
	"  error TEXT,"
	"  deadline_ms INTEGER NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  finished_at INTEGER,"
	"  cancel_requested_at INTEGER"
	");"
	"INSERT INTO bench_runs_v5 (id, kind, transport, client_node, server_node, server_address,"
	"  params, state, server_port, result, server_result, error, deadline_ms, created_at,"
	"  finished_at)"
	"  SELECT id, kind, transport, client_node, server_node, server_address, params, state,"
	"  server_port, result, server_result, error, deadline_ms, created_at, finished_at"
	"  FROM bench_runs;"
	"DROP TABLE bench_runs;"
	"ALTER TABLE bench_runs_v5 RENAME TO bench_runs;"
	"CREATE INDEX bench_runs_state ON bench_runs (state);";

/* v6: what the controller needs to judge a node's reports: how many steps the plan it was sent
 * has (NULL: never sent; -1: sent before v6, count unknown), and how many diff and message
 * bytes its results already hold (a budget per node and deployment). */
static const char migration_v6[] =
	"ALTER TABLE deployment_nodes ADD COLUMN plan_steps INTEGER;"
	"UPDATE deployment_nodes SET plan_steps = -1 WHERE sent_at IS NOT NULL;"
	"ALTER TABLE deployment_nodes ADD COLUMN result_bytes INTEGER NOT NULL DEFAULT 0;"
	"UPDATE deployment_nodes SET result_bytes = COALESCE((SELECT sum(length(diff) + "
	"  length(message)) FROM step_results r WHERE r.deployment_id ="
	"  deployment_nodes.deployment_id AND r.node_id = deployment_nodes.node_id), 0);";

/* v7: validation campaigns. A campaign keeps what its schedule is regenerated from (the nodes
 * with their rails, the spec, the seed) and a cursor (test, round); its results are one row per
 * scheduled slot, inserted when the slot's round starts, each tied to the benchmark run that
 * measured it. The verdict is stored with the campaign when it ends. */
static const char migration_v7[] =
	"CREATE TABLE campaigns ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  playbook_id INTEGER NOT NULL REFERENCES playbooks(id),"
	"  actor TEXT NOT NULL,"
	"  spec TEXT NOT NULL,"
	"  nodes TEXT NOT NULL,"
	"  left_out TEXT NOT NULL,"
	"  options TEXT NOT NULL,"
	"  progress TEXT NOT NULL,"
	"  seed INTEGER NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('running', 'passed', 'failed', 'cancelled',"
	"    'error')),"
	"  test_idx INTEGER NOT NULL DEFAULT 0,"
	"  round INTEGER NOT NULL DEFAULT 0,"
	"  round_started_at INTEGER,"
	"  verdict TEXT,"
	"  error TEXT,"
	"  cancel_requested_at INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  finished_at INTEGER"
	");"
	"CREATE INDEX campaigns_state ON campaigns (state);"
	"CREATE TABLE campaign_results ("
	"  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
	"  test_idx INTEGER NOT NULL,"
	"  round INTEGER NOT NULL,"
	"  slot INTEGER NOT NULL,"
	"  phase TEXT NOT NULL,"
	"  role TEXT NOT NULL CHECK (role IN ('measure', 'congestor')),"
	"  node_a TEXT NOT NULL,"
	"  node_b TEXT NOT NULL,"
	"  rail INTEGER,"
	"  bench_id TEXT,"
	"  state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed',"
	"    'missing', 'cancelled')),"
	"  summary TEXT,"
	"  error TEXT,"
	"  started_at INTEGER,"
	"  live_at INTEGER,"
	"  finished_at INTEGER,"
	"  PRIMARY KEY (campaign_id, test_idx, round, slot)"
	");"
	"ALTER TABLE bench_runs ADD COLUMN campaign_id TEXT;"
	"CREATE INDEX bench_runs_campaign ON bench_runs (campaign_id);";

/* v8: sign-off reports. The report is kept as the exact bytes that were signed, with the
 * detached signature; one sign-off per campaign. nodes repeats the report's nodes with their
 * configuration snapshots, so that staleness is checked without parsing whole reports. */
static const char migration_v8[] =
	"CREATE TABLE signoffs ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  campaign_id TEXT NOT NULL UNIQUE REFERENCES campaigns(id),"
	"  kind TEXT NOT NULL CHECK (kind IN ('signoff', 'revalidation')),"
	"  baseline_id TEXT REFERENCES signoffs(id),"
	"  verdict TEXT NOT NULL,"
	"  sha256 TEXT NOT NULL,"
	"  report TEXT NOT NULL,"
	"  signature TEXT NOT NULL,"
	"  nodes TEXT NOT NULL,"
	"  actor TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL"
	");"
	"CREATE INDEX signoffs_cluster ON signoffs (cluster_id, created_at);";

/* v9: API tokens for the REST API. Only a hash of each token's secret is kept; clusters is a
 * JSON array of cluster names (NULL: every cluster); expires_at NULL: never. A name is unique
 * among the tokens not revoked, so that a revoked token's name can be given to its successor. */
static const char migration_v9[] =
	"CREATE TABLE api_tokens ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  name TEXT NOT NULL,"
	"  role TEXT NOT NULL CHECK (role IN ('admin', 'integrator', 'operator', 'viewer')),"
	"  clusters TEXT,"
	"  secret_hash TEXT NOT NULL,"
	"  created_by TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  expires_at INTEGER,"
	"  revoked_at INTEGER,"
	"  last_used_at INTEGER"
	");"
	"CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;";

/* v10: deployments can be cancelled and remember who made them; revalidations run in the
 * serving controller; playbooks are uploaded for a cluster (cluster_playbooks); enrollment tokens
 * can be revoked; a benchmark run remembers who ordered it. SQLite cannot change a CHECK constraint
 * in place, so deployments is rebuilt (the documented twelve steps: this migration runs with
 * foreign keys off, and foreign_key_check must find nothing before it commits). A deployment's
 * actor is carried over from the audit row that created it. */
static const char migration_v10[] =
	"CREATE TABLE deployments_v10 ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  playbook_id INTEGER NOT NULL REFERENCES playbooks(id),"
	"  check_mode INTEGER NOT NULL,"
	"  policy TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'partial',"
	"    'failed', 'cancelled')),"
	"  reason TEXT,"
	"  current_batch INTEGER NOT NULL DEFAULT 0,"
	"  actor TEXT NOT NULL DEFAULT '',"
	"  cancel_requested_at INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  finished_at INTEGER"
	");"
	"INSERT INTO deployments_v10 (id, cluster_id, playbook_id, check_mode, policy, state,"
	"  reason, current_batch, actor, created_at, finished_at)"
	"  SELECT d.id, d.cluster_id, d.playbook_id, d.check_mode, d.policy, d.state, d.reason,"
	"  d.current_batch, COALESCE((SELECT a.actor FROM audit_log a WHERE a.target = d.id"
	"  AND a.action IN ('deploy.check', 'deploy.apply') ORDER BY a.id LIMIT 1), ''),"
	"  d.created_at, d.finished_at FROM deployments d;"
	"DROP TABLE deployments;"
	"ALTER TABLE deployments_v10 RENAME TO deployments;"
	"CREATE INDEX deployments_state ON deployments (state);"
	"CREATE TABLE revalidations ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  baseline_id TEXT NOT NULL REFERENCES signoffs(id),"
	"  playbook TEXT,"
	"  apply INTEGER NOT NULL,"
	"  tolerance_bw REAL NOT NULL,"
	"  tolerance_lat REAL NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('pending', 'configuring', 'validating', 'signed',"
	"    'failed', 'cancelled')),"
	"  reason TEXT,"
	"  deployment_id TEXT REFERENCES deployments(id),"
	"  campaign_id TEXT REFERENCES campaigns(id),"
	"  signoff_id TEXT REFERENCES signoffs(id),"
	"  verdict TEXT,"
	"  actor TEXT NOT NULL,"
	"  cancel_requested_at INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  finished_at INTEGER"
	");"
	"CREATE INDEX revalidations_state ON revalidations (state);"
	"CREATE TABLE cluster_playbooks ("
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  playbook_id INTEGER NOT NULL REFERENCES playbooks(id),"
	"  actor TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (cluster_id, playbook_id)"
	");"
	"ALTER TABLE enroll_tokens ADD COLUMN revoked_at INTEGER;"
	"ALTER TABLE bench_runs ADD COLUMN actor TEXT;";

/* v11: a node's facts (~11 KB, in SQLite overflow pages) move out of its row into node_facts,
 * and what listings need of them is derived as they are written (store_nodes.c): reading a
 * column after the facts, or updating last_seen, no longer reads or rewrites them. */
static const char migration_v11[] =
	"CREATE TABLE node_facts ("
	"  node_id TEXT PRIMARY KEY NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,"
	"  facts TEXT NOT NULL"
	");"
	"INSERT INTO node_facts (node_id, facts) SELECT id, facts FROM nodes WHERE facts IS NOT "
	"NULL;"
	"ALTER TABLE nodes DROP COLUMN facts;"
	"ALTER TABLE nodes ADD COLUMN summary TEXT;"
	"ALTER TABLE nodes ADD COLUMN snapshot TEXT;"
	"ALTER TABLE nodes ADD COLUMN derived_v INTEGER NOT NULL DEFAULT 0;";

/* v12: a deployment's node counts by batch and state (the rollout's every pass) and its nodes
 * in one state (the waiting ones, the late ones) from an index alone: at 10,000 nodes the
 * counts read every row through the primary key, ~20 ms a pass (docs/scaling.md). */
static const char migration_v12[] =
	"CREATE INDEX deployment_nodes_state ON deployment_nodes (deployment_id, state, batch);";

/* v13: a campaign's result row can be 'invalid': its run ended, but its reports failed the
 * controller's plausibility checks (controller/campaign/evidence.c); the row keeps the reason
 * (error) and who reported it (summary: {"invalid": {...}}) and never enters a statistic.
 * SQLite cannot change a CHECK constraint in place, so the table is rebuilt. */
static const char migration_v13[] =
	"CREATE TABLE campaign_results_v13 ("
	"  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
	"  test_idx INTEGER NOT NULL,"
	"  round INTEGER NOT NULL,"
	"  slot INTEGER NOT NULL,"
	"  phase TEXT NOT NULL,"
	"  role TEXT NOT NULL CHECK (role IN ('measure', 'congestor')),"
	"  node_a TEXT NOT NULL,"
	"  node_b TEXT NOT NULL,"
	"  rail INTEGER,"
	"  bench_id TEXT,"
	"  state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed',"
	"    'missing', 'cancelled', 'invalid')),"
	"  summary TEXT,"
	"  error TEXT,"
	"  started_at INTEGER,"
	"  live_at INTEGER,"
	"  finished_at INTEGER,"
	"  PRIMARY KEY (campaign_id, test_idx, round, slot)"
	");"
	"INSERT INTO campaign_results_v13 SELECT campaign_id, test_idx, round, slot, phase, role,"
	"  node_a, node_b, rail, bench_id, state, summary, error, started_at, live_at, finished_at"
	"  FROM campaign_results;"
	"DROP TABLE campaign_results;"
	"ALTER TABLE campaign_results_v13 RENAME TO campaign_results;";

/* v14: a sign-off's kind of verdict, for listings without parsing reports: acceptance (1: an
 * acceptance sign-off; 0: a smoke / baseline report, and every report signed before v14, whose
 * campaigns were not judged for acceptance) and how many nodes its verdict excluded. */
static const char migration_v14[] =
	"ALTER TABLE signoffs ADD COLUMN acceptance INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE signoffs ADD COLUMN excluded INTEGER NOT NULL DEFAULT 0;";

/* v15: a revalidation checks every configuration playbook its baseline certified, one
 * deployment each in sequence: checks is the plan and its progress, a JSON array of
 * {playbook: {name, version, sha256}, deployment: id | null} (docs/signoff.md). */
static const char migration_v15[] = "ALTER TABLE revalidations ADD COLUMN checks TEXT;";

/* v16: the workload-manager hand-off (controller/wlm/wlm.h, store_wlm.h): each cluster's
 * binding (the validated document), and the ledger of drains and resumes, written ahead in the
 * transaction that stores their finding and carried out by the WLM worker. */
static const char migration_v16[] =
	"CREATE TABLE wlm_bindings ("
	"  cluster_id INTEGER PRIMARY KEY REFERENCES clusters(id),"
	"  doc TEXT NOT NULL,"
	"  updated_by TEXT NOT NULL,"
	"  updated_at INTEGER NOT NULL"
	");"
	"CREATE TABLE wlm_actions ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  node_id TEXT,"
	"  hostname TEXT NOT NULL,"
	"  wlm_name TEXT NOT NULL,"
	"  action TEXT NOT NULL CHECK (action IN ('drain', 'resume')),"
	"  reason TEXT NOT NULL,"
	"  source TEXT NOT NULL CHECK (source IN ('campaign', 'deployment', 'maintenance',"
	"    'health')),"
	"  source_id TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed', 'not_ours')),"
	"  result TEXT,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  created_at INTEGER NOT NULL,"
	"  next_at INTEGER NOT NULL,"
	"  done_at INTEGER"
	");"
	"CREATE INDEX wlm_actions_pending ON wlm_actions (state, id);"
	"CREATE INDEX wlm_actions_node ON wlm_actions (cluster_id, wlm_name, id);";

/* v17: maintenances (store_maint.c, docs/operations.md "Maintenance with Slurm"): a playbook
 * rolled over a cluster that runs jobs, batch by batch: drained, configured, validated, handed
 * back. Its batches and nodes carry their state so a restarted controller resumes it. */
static const char migration_v17[] =
	"CREATE TABLE maintenances ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  actor TEXT NOT NULL,"
	"  mode TEXT NOT NULL CHECK (mode IN ('deploy', 'revalidate')),"
	"  scope TEXT,"
	"  playbook TEXT NOT NULL,"
	"  baseline_id TEXT REFERENCES signoffs(id),"
	"  batch TEXT NOT NULL,"
	"  batch_size INTEGER NOT NULL,"
	"  n_batches INTEGER NOT NULL,"
	"  current_batch INTEGER NOT NULL,"
	"  min_in_service REAL NOT NULL,"
	"  job_timeout_ms INTEGER NOT NULL,"
	"  sign INTEGER NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed',"
	"    'cancelled')),"
	"  reason TEXT,"
	"  cancel_requested_at INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  started_at INTEGER,"
	"  finished_at INTEGER"
	");"
	"CREATE INDEX maintenances_state ON maintenances (state);"
	"CREATE TABLE maintenance_batches ("
	"  maintenance_id TEXT NOT NULL REFERENCES maintenances(id),"
	"  batch INTEGER NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('waiting', 'draining', 'configuring',"
	"    'validating', 'done', 'failed', 'skipped')),"
	/* The ids are stored before the deployment or campaign is made (a controller stopped in
	 * between makes it with that id): no foreign key. */
	"  deployment_id TEXT,"
	"  campaign_id TEXT,"
	"  signoff_id TEXT REFERENCES signoffs(id),"
	"  started_at INTEGER,"
	"  finished_at INTEGER,"
	"  PRIMARY KEY (maintenance_id, batch)"
	");"
	"CREATE TABLE maintenance_nodes ("
	"  maintenance_id TEXT NOT NULL REFERENCES maintenances(id),"
	"  node_id TEXT NOT NULL,"
	"  hostname TEXT NOT NULL,"
	"  batch INTEGER NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('waiting', 'draining', 'waiting_for_jobs',"
	"    'configuring', 'rebooting', 'validating', 'resumed', 'held_out', 'skipped')),"
	"  reason TEXT,"
	"  jobs TEXT,"
	"  since INTEGER NOT NULL,"
	"  PRIMARY KEY (maintenance_id, node_id)"
	");";

/* v18: a node that reboots in its plan (a `reboot` step): the step it reboots at (index,
 * name) and since when (NULL: none under way), and how long its last reboot took, from its
 * "rebooting" to that step's result (docs/rollout.md). */
static const char migration_v18[] = "ALTER TABLE deployment_nodes ADD COLUMN reboot_step INTEGER;"
				    "ALTER TABLE deployment_nodes ADD COLUMN reboot_name TEXT;"
				    "ALTER TABLE deployment_nodes ADD COLUMN reboot_since INTEGER;"
				    "ALTER TABLE deployment_nodes ADD COLUMN reboot_ms INTEGER;";

/* v19: the agents' health events (docs/health.md): kept per node with a bound, the warnings and
 * critical ones found by severity and time at any scale; and a counter per (cluster,
 * kind, severity) that trimming never lowers, for /metrics. */
static const char migration_v19[] =
	"CREATE TABLE health_events ("
	"  id INTEGER PRIMARY KEY,"
	"  node_id TEXT NOT NULL REFERENCES nodes(id),"
	"  at INTEGER NOT NULL,"
	"  received_at INTEGER NOT NULL,"
	"  kind TEXT NOT NULL"
	"    CHECK (kind IN ('xid', 'kmsg', 'port', 'gpu', 'nvlink', 'readiness')),"
	"  severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),"
	"  source TEXT NOT NULL,"
	"  what TEXT NOT NULL,"
	"  detail TEXT NOT NULL DEFAULT '',"
	"  boot_id TEXT NOT NULL DEFAULT '',"
	"  repeats INTEGER NOT NULL DEFAULT 0 CHECK (repeats >= 0),"
	"  acked_at INTEGER,"
	"  acked_by TEXT"
	");"
	"CREATE INDEX health_events_node ON health_events (node_id, id);"
	"CREATE INDEX health_events_severity ON health_events (severity, received_at);"
	"CREATE TABLE health_event_counts ("
	"  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
	"  kind TEXT NOT NULL,"
	"  severity TEXT NOT NULL,"
	"  count INTEGER NOT NULL,"
	"  PRIMARY KEY (cluster_id, kind, severity)"
	");";

const struct store_migration store_migrations[] = {
	{1, migration_v1, false},   {2, migration_v2, false},	{3, migration_v3, false},
	{4, migration_v4, false},   {5, migration_v5, false},	{6, migration_v6, false},
	{7, migration_v7, false},   {8, migration_v8, false},	{9, migration_v9, false},
	{10, migration_v10, true},  {11, migration_v11, true},	{12, migration_v12, false},
	{13, migration_v13, true},  {14, migration_v14, false}, {15, migration_v15, false},
	{16, migration_v16, false}, {17, migration_v17, false}, {18, migration_v18, false},
	{19, migration_v19, false},
};

const size_t store_migrations_count = RY_ARRAY_SIZE(store_migrations);

_Static_assert(RY_ARRAY_SIZE(store_migrations) == STORE_SCHEMA_VERSION,
	       "one migration per schema version");
