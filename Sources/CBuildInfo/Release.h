/* The release this tree is: the one place the version is written. The Makefile reads it
 * (sed) for `--version`, the tarball and the Debian package; CHANGELOG.md lists what it adds. */
#define NOTIFY_ROUTE_RELEASE "0.3.0"
