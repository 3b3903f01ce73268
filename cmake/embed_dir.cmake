# Turn every file under a directory into one C table (the web portal's files, controller/portal):
#   cmake -DDIR=portal -DOUT=portal_files.c -DPREFIX=/portal -P embed_dir.cmake
# Each file becomes a byte array, listed with its URL path: "/" for index.html, and
# PREFIX/VERSION/NAME for the others, VERSION being the first 16 hex digits of the SHA-256 over
# every file's name and content (a file's URL changes whenever any file does, so the files may be
# cached for good). In index.html, @PORTAL_BASE@ becomes PREFIX/VERSION. Names must be made of
# A-Za-z0-9._- and '/' (they become literal route segments); dot files and editor backups (~)
# are left out.
cmake_minimum_required(VERSION 3.20)
if(NOT DIR OR NOT OUT OR NOT PREFIX)
	message(FATAL_ERROR "usage: cmake -DDIR=dir -DOUT=file.c -DPREFIX=/portal -P embed_dir.cmake")
endif()
file(GLOB_RECURSE names RELATIVE "${DIR}" "${DIR}/*")
list(SORT names)
set(kept "")
foreach(n IN LISTS names)
	if(n MATCHES "(^|/)\\." OR n MATCHES "~$")
		continue()
	endif()
	if(NOT n MATCHES "^[A-Za-z0-9._/-]+$")
		message(FATAL_ERROR "${DIR}/${n}: a portal file's name must be made of A-Za-z0-9._-/")
	endif()
	list(APPEND kept "${n}")
endforeach()
if(NOT "index.html" IN_LIST kept)
	message(FATAL_ERROR "${DIR}/index.html is missing")
endif()

set(sums "")
foreach(n IN LISTS kept)
	file(SHA256 "${DIR}/${n}" h)
	string(APPEND sums "${n} ${h}\n")
endforeach()
string(SHA256 version "${sums}")
string(SUBSTRING "${version}" 0 16 version)
set(base "${PREFIX}/${version}")

set(arrays "")
set(table "")
set(i 0)
foreach(n IN LISTS kept)
	if(n STREQUAL "index.html")
		file(READ "${DIR}/${n}" text)
		string(REPLACE "@PORTAL_BASE@" "${base}" text "${text}")
		string(HEX "${text}" hex)
		set(path "/")
	else()
		file(READ "${DIR}/${n}" hex HEX)
		set(path "${base}/${n}")
	endif()
	string(LENGTH "${hex}" len)
	math(EXPR len "${len} / 2")
	string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
	string(APPEND arrays "static const unsigned char f${i}[] = {${body}0x00};\n")
	string(APPEND table "\t{\"${path}\", \"${n}\", f${i}, ${len}},\n")
	math(EXPR i "${i} + 1")
endforeach()

file(WRITE "${OUT}" "/* Generated from ${DIR} by cmake/embed_dir.cmake; do not edit. */\n"
	"#include \"controller/portal/portal_files.h\"\n\n${arrays}\n"
	"const struct ctl_portal_file ctl_portal_files[] = {\n${table}};\n"
	"const size_t ctl_portal_files_count = ${i};\n"
	"const char ctl_portal_base[] = \"${base}\";\n")
