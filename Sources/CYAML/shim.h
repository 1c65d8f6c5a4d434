#include <yaml.h>

/* libyaml (Debian libyaml-dev, pkg-config yaml-0.1): the config parser reads its
 * events and `config show` writes through its emitter. Nothing else is needed from C. */
