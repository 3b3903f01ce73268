# Turn a file into a C array: cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUT}" "/* Generated from ${IN}; do not edit. */\n#include <stddef.h>\n"
	"const char ${NAME}[] = {${body}0x00};\nconst size_t ${NAME}_len = ${bytes};\n")
