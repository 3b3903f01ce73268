# controller/campaign: the scheduler (pure).
railyard_test(test_schedule SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_schedule.c
	LIBS ry_campaign LABELS unit TIMEOUT 120)
# controller/campaign: the verdict (pure).
railyard_test(test_verdict SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_verdict.c
	LIBS ry_campaign PkgConfig::JANSSON LABELS unit TIMEOUT 120)
# controller/campaign: the plausibility checks of benchmark reports (pure).
railyard_test(test_evidence SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_evidence.c
	LIBS ry_campaign PkgConfig::JANSSON LABELS unit TIMEOUT 120)
# controller/campaign: preflight checks of a node's facts (pure), on the fixture facts.
railyard_test(test_preflight SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_preflight.c
	LIBS ry_campaign PkgConfig::JANSSON LABELS unit TIMEOUT 120)
# controller/campaign: collective tests — bus bandwidth factors, the launcher's report as
# evidence, the slow node from the pairwise probe, the verdict of a collective (pure).
railyard_test(test_coll_campaign SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_coll_campaign.c
	LIBS ry_campaign PkgConfig::JANSSON LABELS unit TIMEOUT 120)
