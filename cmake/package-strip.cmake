# CPACK_PRE_BUILD_SCRIPTS of cmake/package.cmake: strip the programs in CPack's staging
# directory as dh_strip does (--remove-section=.comment --remove-section=.note on executables),
# once they are installed there and before the packages are made.
file(GLOB programs "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/usr/bin/*"
	"${CPACK_TEMPORARY_INSTALL_DIRECTORY}/usr/bin/*")
foreach(p ${programs})
	execute_process(COMMAND strip --remove-section=.comment --remove-section=.note "${p}"
		RESULT_VARIABLE rc)
	if(NOT rc EQUAL 0)
		message(FATAL_ERROR "strip ${p} failed")
	endif()
endforeach()
