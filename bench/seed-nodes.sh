# Sourced by the benchmark scripts: seed_nodes STATE_DIR N AGENT SYSROOT initialises a state
# directory and writes N offline nodes of cluster "bench" straight into its database (before
# serve: the one-writer rule is about a serving controller), each with the facts the agent reads
# from SYSROOT under its own host name, so that replies are the size of real ones.
seed_nodes() {
	local dir=$1 n=$2 agent=$3 sysroot=$4 now
	"$CTL" init --state-dir "$dir" >/dev/null 2>&1
	"$agent" facts --json --sysroot "$sysroot" | jq -c . >"$dir/facts.json"
	now=$(($(date +%s%N) / 1000000))
	sqlite3 "$dir/controller.db" <<SQL
BEGIN;
INSERT INTO clusters (name, created_at) VALUES ('bench', $now);
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < $n)
INSERT INTO nodes (id, cluster_id, hostname, cert_serial, cert_fingerprint, state, enrolled_at,
		   last_seen, agent_version)
SELECT printf('n-%012x', i), (SELECT id FROM clusters WHERE name = 'bench'),
       printf('bench-%04d', i), lower(hex(randomblob(16))),
       'sha256:' || lower(hex(randomblob(32))), 'offline', $now - 86400000, $now - 3600000,
       '0.1.0'
FROM seq;
-- Facts in their own table (schema v11); serve derives each node's summary from them.
INSERT INTO node_facts (node_id, facts)
SELECT id, json_set(CAST(readfile('$dir/facts.json') AS TEXT), '\$.hostname', hostname)
FROM nodes WHERE cluster_id = (SELECT id FROM clusters WHERE name = 'bench');
COMMIT;
SQL
}
