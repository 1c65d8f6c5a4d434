#include "CBuildInfo.h"

// Written by the Makefile from `git describe` (and git-ignored). A C file rather than a
// Swift define: a new version recompiles this file alone and relinks, where a changed
// compiler flag would rebuild every Swift module.
#if __has_include("../../.build-version.h")
#include "../../.build-version.h"
#endif

#ifndef NOTIFY_ROUTE_VERSION
#define NOTIFY_ROUTE_VERSION "0.2.0"
#endif

const char *notify_route_build_version(void) { return NOTIFY_ROUTE_VERSION; }
