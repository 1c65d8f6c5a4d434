#include <yaml.h>

/* libyaml (Debian libyaml-dev; `apt-get install libyaml-dev`): the config parser reads its
 * events and `config show` writes through its emitter. Nothing else is needed from C.
 * Linked dynamically by default (see module.modulemap). */
