// `CommandLine` for `notify-route`, from the arguments glibc hands every `.preinit_array`
// function. Defining the runtime's two functions here keeps the linker from taking its own
// CommandLine object, whose start-up constructor finds argv by reading /proc/self/maps on
// every start (Tests/Benchmarks/README.md, "Why the code is so").
#include "CArguments.h"
#include <stddef.h>

static int startArgc;
static char **startArgv;
static int overrideArgc;
static char **overrideArgv;

static void captureArguments(int argc, char **argv, char **envp) {
    (void)envp;
    startArgc = argc;
    startArgv = argv;
}

// Before every constructor (.preinit_array: executables only, which is all that links
// this), so no constructor can read CommandLine before the arguments are here.
__attribute__((used, section(".preinit_array")))
static void (*const captureArgumentsEntry)(int, char **, char **) = captureArguments;

char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen) {
    static char *empty[] = {NULL};
    if (overrideArgv) {
        *outArgLen = overrideArgc;
        return overrideArgv;
    }
    if (!startArgv) {
        *outArgLen = 0;
        return empty;
    }
    *outArgLen = startArgc;
    return startArgv;
}

void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    overrideArgv = argv;
    overrideArgc = argc;
}
