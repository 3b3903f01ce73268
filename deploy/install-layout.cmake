# Run at install time (install(CODE) in deploy/CMakeLists.txt) for RY_COMPONENT (controller or
# agent): its systemd unit and its configuration file, laid out for the prefix of this install.
# Prefix /usr (the packages; CPack installs with DESTDIR) puts them where Debian 12 has them:
# /lib/systemd/system and /etc/railyard; any other prefix P keeps them under it:
# P/lib/systemd/system (systemd reads /usr/local/lib/systemd/system too) and P/etc/railyard.
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
	set(unitdir /lib/systemd/system)
	set(RY_SYSCONFDIR /etc)
else()
	set(unitdir "${prefix}/lib/systemd/system")
	set(RY_SYSCONFDIR "${prefix}/etc")
endif()
set(RY_BINDIR "${prefix}/bin")
set(RY_CTL_DOCDIR "${prefix}/share/doc/railyard-controller")
set(RY_AGENT_DOCDIR "${prefix}/share/doc/railyard-agent")
set(CTL_STATE_DIR /var/lib/railyard/controller)
set(AGENT_STATE_DIR /var/lib/railyard/agent)
set(CTL_USER railyard)

set(unit railyard-${RY_COMPONENT})
set(out "${RY_BINARY_DIR}/install-layout")
configure_file("${RY_SOURCE_DIR}/systemd/${unit}.service.in" "${out}/${unit}.service" @ONLY)
file(INSTALL DESTINATION "${unitdir}" TYPE FILE FILES "${out}/${unit}.service")
# The configuration file is a conffile in the package; dpkg keeps an operator's edits on
# upgrade. A plain install does not overwrite an edited one either.
set(conf "${RY_SYSCONFDIR}/railyard/${RY_COMPONENT}.env")
if(EXISTS "$ENV{DESTDIR}${conf}")
	message(STATUS "Keeping: $ENV{DESTDIR}${conf}")
else()
	file(INSTALL DESTINATION "${RY_SYSCONFDIR}/railyard" TYPE FILE
		FILES "${RY_SOURCE_DIR}/debian/${RY_COMPONENT}.env")
endif()
