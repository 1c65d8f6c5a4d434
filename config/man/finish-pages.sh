#!/usr/bin/env bash
# Finishes the pages swift-argument-parser's generate-manual wrote (the Makefile's `man`):
# each page's EXIT STATUS gets our codes instead of mdoc's generic `.Ex -std`, and
# notify-route.yaml(5), the config reference, is made from `notify-route config reference`.
#
#   bash config/man/finish-pages.sh BINARY DIRECTORY
set -euo pipefail
binary=$1 dir=$2

exit_status='.Bl -tag -width 4n\
.It 0\
delivered, or suppressed on purpose (a duplicate, dropped by a rule)\
.It 1\
no sink delivered\
.It 64\
usage error: an unknown option, a missing title, a bad value\
.It 65\
bad event data (ingest: a line that is not an event)\
.It 69\
no sink available (none configured for the event can run here)\
.It 78\
config error, with file:line:column on stderr\
.El'
for page in "$dir"/*.1; do
  # A blank line in a discussion is a paragraph break, which mdoc spells .Pp.
  sed -i -e "s/^\\.Ex -std\$/$exit_status/" -e 's/^$/.Pp/' "$page"
done
sed -i 's/^\.Sh "SEE ALSO"$/.Sh "SEE ALSO"\n.Xr notify-route.yaml 5 ,/' "$dir/notify-route.1"
# A subcommand's page names itself by its file's name in NAME (notify-route.send), which whatis and
# apropos read as one word; its synopsis keeps the command as typed (notify-route send).
for page in "$dir"/notify-route.*.1; do
  command=$(sed -n 's/^\.Nm "\(notify-route .*\)"$/\1/p' "$page" | head -1)
  [ -n "$command" ] || continue
  sed -i -e "s/^\.Nm \"$command\"\$/.Nm ${command// /.}/" -e "s/^\.Nm\$/.Nm \"$command\"/" "$page"
done

# The reference is Markdown: headings become sections, each table row a tagged item.
{
  printf '.Dd %s\n.Dt NOTIFY-ROUTE.YAML 5\n.Os\n.Sh NAME\n.Nm notify-route.yaml\n' "$(date '+%B %-d, %Y')"
  printf '.Nd "the notify-route config file: every key, its type, default and meaning"\n'
  printf '.Sh DESCRIPTION\nnotify-route reads its config from\n.Fl -config ,\n.Ev NOTIFY_ROUTE_CONFIG ,\n'
  printf '.Pa $XDG_CONFIG_HOME/notify-route/config.yaml\nor an embedded default.\n'
  "$binary" config reference | awk '
    function text(s,   link, label) {
      # [label](#anchor) -> label: the anchors are of the Markdown file.
      while (match(s, /\[[^]]*\]\(#[^)]*\)/)) {
        link = substr(s, RSTART, RLENGTH); label = substr(link, 2, index(link, "](") - 2)
        s = substr(s, 1, RSTART - 1) label substr(s, RSTART + RLENGTH)
      }
      gsub(/\\/, "\\e", s); gsub(/`/, "", s); sub(/^[.'"'"']/, "\\\\\\&&", s); return s }
    /^# / { next }
    /^## / { if (list) { print ".El"; list = 0 } print ".Sh \"" toupper(substr($0, 4)) "\""; next }
    /^\|---/ { next }
    /^\| key \|/ { next }
    /^\|/ {
      n = split($0, cell, / \| /); sub(/^\| /, "", cell[1]); sub(/ \|$/, "", cell[n])
      if (!list) { print ".Bl -tag -width Ds"; list = 1 }
      print ".It " text(cell[1])
      line = text(cell[4]) "."
      if (n >= 2 && cell[2] != "") line = line " Type: " text(cell[2]) "."
      if (n >= 3 && cell[3] != "") line = line " Default: " text(cell[3]) "."
      if (n >= 5 && cell[5] != "") line = line " Example: " text(cell[5]) "."
      print line; next
    }
    /^$/ { if (list) { print ".El"; list = 0 } print ".Pp"; next }
    { print text($0) }
    END { if (list) print ".El" }'
  printf '.Sh "SEE ALSO"\n.Xr notify-route 1\n'
} >"$dir/notify-route.yaml.5"
