#ifndef NOTIFY_ROUTE_BUILD_INFO_H
#define NOTIFY_ROUTE_BUILD_INFO_H

/// The version this binary was built as: `git describe` when `make` built it
/// (the Makefile writes .build-version.h), the package's version otherwise.
const char *notify_route_build_version(void);

#endif
