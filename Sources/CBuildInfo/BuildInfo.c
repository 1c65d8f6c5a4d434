#include "CBuildInfo.h"
#include "Release.h"

// Written by the Makefile (and git-ignored): the release, with the commit when the tree is not
// the release's tag. A C file rather than a Swift define: a new version recompiles this file
// alone and relinks, where a changed compiler flag would rebuild every Swift module.
#if __has_include("../../.build-version.h")
#include "../../.build-version.h"
#endif

// A plain `swift build` (no make) answers with the release alone.
#ifndef NOTIFY_ROUTE_VERSION
#define NOTIFY_ROUTE_VERSION NOTIFY_ROUTE_RELEASE
#endif

const char *notify_route_build_version(void) { return NOTIFY_ROUTE_VERSION; }
