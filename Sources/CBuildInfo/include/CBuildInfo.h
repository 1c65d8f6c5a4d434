#ifndef NOTIFY_ROUTE_BUILD_INFO_H
#define NOTIFY_ROUTE_BUILD_INFO_H

/// The version this binary was built as: the release (Release.h), with `+g<commit>` when
/// `make` built it from a tree that is not the release's tag (the Makefile writes .build-version.h).
const char *notify_route_build_version(void);

#endif
