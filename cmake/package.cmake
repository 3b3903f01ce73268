# Debian packages of this build with CPack (`make package`, or `cmake --build build --target
# package`): railyard-controller, railyard-agent, railyard-bench and railyard-cli, one per install
# component (deploy/CMakeLists.txt), written into the build directory. Why CPack and not
# debhelper, and what each package holds: docs/operations.md, "Packages".
# Not for a sanitizer build: its programs are not what is shipped (no `package` target then).
if(RAILYARD_SANITIZE)
	message(STATUS "railyard: no package target in a sanitizer build")
	return()
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL controller agent bench cli)
set(CPACK_PACKAGE_NAME railyard)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "The Railyard authors")
set(RAILYARD_PACKAGE_MAINTAINER "Railyard maintainers <maintainers@railyard.invalid>"
	CACHE STRING "Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${RAILYARD_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SOURCE railyard)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# Runtime libraries from dpkg-shlibdeps (Debian 12's names and minimum versions); what the
# maintainer scripts run is added by hand below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Stripped as dh_strip does it, .comment and .note too (CPACK_STRIP_FILES keeps them).
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/package-strip.cmake)
# Policy's modes and owners: 0755 directories, root:root, maintainer scripts 0755, conffiles
# lists 0644.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
	GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

set(deb ${CMAKE_SOURCE_DIR}/deploy/debian)
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_NAME railyard-controller)
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_DEPENDS "adduser, init-system-helpers (>= 1.54~)")
# The operations command line (railyard-controller's old spellings run it).
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_RECOMMENDS "railyard-cli")
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_CONTROL_EXTRA
	"${deb}/railyard-controller/conffiles;${deb}/railyard-controller/postinst;${deb}/railyard-controller/prerm;${deb}/railyard-controller/postrm")
set(CPACK_DEBIAN_CONTROLLER_DESCRIPTION "Railyard controller: H200 GPU cluster bring-up and sign-off
Railyard stands up and signs off NVIDIA H200 GPU clusters. The controller keeps
the cluster's state in SQLite with its own certificate authority, serves the
node agents over gRPC with mutual TLS, serves a REST API and a web portal, and
runs playbook deployments, RDMA benchmarks between nodes, validation campaigns
and signed sign-off reports.
.
The package creates the system user railyard, initialises the state directory
/var/lib/railyard/controller (CA, server certificate, database) on first
installation and runs railyard-controller.service as that user. It also ships
the playbooks and the script that bootstraps an agent on a new node.")

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME railyard-agent)
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "init-system-helpers (>= 1.54~)")
set(CPACK_DEBIAN_AGENT_PACKAGE_SUGGESTS "railyard-bench")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
	"${deb}/railyard-agent/conffiles;${deb}/railyard-agent/postinst;${deb}/railyard-agent/prerm;${deb}/railyard-agent/postrm")
set(CPACK_DEBIAN_AGENT_DESCRIPTION "Railyard agent for the nodes of an H200 GPU cluster
The Railyard agent runs on every node, as root. It reports the node's facts
(GPUs, NICs, RDMA devices, firmware, kernel) to the Railyard controller over
gRPC with mutual TLS, applies the configuration plans the controller sends
(packages, kernel modules, files, services, RoCE QoS) and serves and runs RDMA
and TCP benchmarks between nodes.
.
railyard-agent.service starts once the node is enrolled with a token from the
controller (railyard-agent enroll, or bootstrap-agent.sh).")

set(CPACK_DEBIAN_BENCH_PACKAGE_NAME railyard-bench)
# railyard-coll runs under Open MPI's mpirun (and its orted on every node); UCX is Open MPI's
# RDMA path (pml ucx), named so that a minimal install has it. libopenmpi3 comes from
# dpkg-shlibdeps.
if(TARGET railyard-coll)
	set(CPACK_DEBIAN_BENCH_PACKAGE_DEPENDS "openmpi-bin")
	set(CPACK_DEBIAN_BENCH_PACKAGE_RECOMMENDS "libucx0")
endif()
set(CPACK_DEBIAN_BENCH_DESCRIPTION "Railyard benchmark tools: RDMA verbs, TCP and collectives
railyard-bench measures latency and bandwidth between two hosts over RDMA verbs
(RoCE or InfiniBand) or TCP, with the benchmark engine of the Railyard agent:
one side serves, the other connects and prints the figures, optionally as one
JSON document. railyard-coll measures collective bandwidth (all-reduce,
all-gather, reduce-scatter, all-to-all, send/recv) under Open MPI or NCCL as
nccl-tests defines it.")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME railyard-cli)
set(CPACK_DEBIAN_CLI_PACKAGE_RECOMMENDS "ca-certificates")
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS "bash-completion")
set(CPACK_DEBIAN_CLI_DESCRIPTION "Railyard operator's command line over the REST API
railyard is the command line of a Railyard operator: it talks to a Railyard
controller's REST API over HTTPS and lists nodes, makes enrollment tokens,
deploys playbooks, runs validation campaigns and lists, exports and verifies
sign-offs, as far as its API token allows. It needs no state directory and runs
anywhere that reaches the API; it verifies a sign-off's files offline on its
own.")

include(CPack)
