/* railyard-controller: the subcommand table is in cli/. */
#include "controller/cli/cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv);
}
