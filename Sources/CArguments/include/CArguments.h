#ifndef NOTIFY_ROUTE_ARGUMENTS_H
#define NOTIFY_ROUTE_ARGUMENTS_H

/// The Swift runtime's two entry points for `CommandLine`, defined here for `notify-route`
/// (see Arguments.c); nothing calls them by this header.
char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen);
void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc);

#endif
