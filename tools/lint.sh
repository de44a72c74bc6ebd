#!/usr/bin/env bash
# Mechanical style checks (docs/style.md), run by ctest with label `lint`.
# Usage: tools/lint.sh format|layering|banned|cites|headers|headers-all|tidy|tidy-all [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."

product_dirs=(core io storage protocol server)
sources() { git ls-files --cached --others --exclude-standard -- "$@" | grep -E '\.(h|cc)$'; }
jobs=$(nproc)

# The module a path belongs to, for the layering rule.
module_of() {
  case $1 in
    core/base/*) echo base ;;
    core/*) echo core ;;
    io/* | storage/* | protocol/* | server/* | tools/* | bench/* | tests/*) echo "${1%%/*}" ;;
    *) echo other ;;
  esac
}

# Which modules each module may include (docs/style.md §1): arrows point down only.
allowed_for() {
  case $1 in
    base) echo "base" ;;
    io) echo "base io" ;;
    storage) echo "base io storage" ;;
    protocol) echo "base protocol" ;;
    core) echo "base io storage core" ;;
    server) echo "base io storage protocol core server" ;;
    tools) echo "base protocol tools" ;;
    *) echo "*" ;;
  esac
}

check_format() {
  local bad
  bad=$(sources "${product_dirs[@]}" tools bench tests | xargs -r clang-format-16 --dry-run 2>&1 |
        grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error)' | cut -d: -f1 | sort -u)
  if [[ -n $bad ]]; then
    echo "not clang-formatted (run 'make format'):"; echo "$bad"; return 1
  fi
  local long
  long=$(sources "${product_dirs[@]}" tools bench tests | xargs -r awk 'length > 100 { print FILENAME ":" FNR }')
  if [[ -n $long ]]; then echo "lines over 100 columns:"; echo "$long"; return 1; fi
}

check_layering() {
  local status=0 file module included target
  while read -r file; do
    module=$(module_of "$file")
    local allowed
    allowed=$(allowed_for "$module")
    [[ $allowed == "*" ]] && continue
    while read -r included; do
      target=$(module_of "$included")
      [[ $target == other ]] && continue
      if [[ " $allowed " != *" $target "* ]]; then
        echo "$file includes $included: $module may not depend on $target"; status=1
      fi
      if [[ $included == */internal/* && ${included%%/internal/*} != "${file%%/*}"* ]]; then
        echo "$file includes another module's internals: $included"; status=1
      fi
    done < <(grep -oE '^#include "[^"]+"' "$file" | sed -E 's/#include "(hark\/)?(.*)"/\2/')
  done < <(sources "${product_dirs[@]}" tools)
  return $status
}

check_banned() {
  local hits
  hits=$(sources "${product_dirs[@]}" | xargs -r grep -nE \
         '(^|[^_[:alnum:]])throw([^_[:alnum:]]|$)|(^|[^_[:alnum:]])try *\{|std::shared_ptr|std::function|FIXME' |
         grep -vE '^[^:]+:[0-9]+: *//')
  if [[ -n $hits ]]; then
    echo "banned in product code (exceptions, shared_ptr, std::function, FIXME):"; echo "$hits"; return 1
  fi
}

# The repository stands alone: a comment cites only documents that are in it.
check_cites() {
  local status=0 cited bad
  bad=$(git ls-files -- '*.h' '*.cc' '*.sh' '*.cmake' '*CMakeLists.txt' .clang-tidy |
        xargs -r grep -nE '(SEMANTICS|ARCHITECTURE|STYLE)\.md|(SEMANTICS|ARCHITECTURE|STYLE) §|\.\./shared/')
  if [[ -n $bad ]]; then
    echo "cites a document outside this repository:"; echo "$bad"; status=1
  fi
  while read -r cited; do
    [[ -e ${cited#*:} ]] && continue
    echo "cites a file that does not exist: $cited"; status=1
  done < <(git ls-files -- '*.h' '*.cc' '*.sh' '*.cmake' '*CMakeLists.txt' '*.md' .clang-tidy |
           grep -v '^docs/examples/' |
           xargs -r grep -oE '(^|[^[:alnum:]_./-])docs/[[:alnum:]_./-]+\.md' |
           sed -E 's/:[^d]*docs\//:docs\//' | sort -u)
  return $status
}

# The files changed since the commit in tools/tidy-base.txt (committed or not), or "all" when
# there is no such base or it is not an ancestor of HEAD.
changed_since_base() {
  local base
  base=$(cat tools/tidy-base.txt 2>/dev/null)
  if [[ -z $base ]] || ! git merge-base --is-ancestor "$base" HEAD 2>/dev/null; then
    echo all; return
  fi
  { git diff --name-only "$base" --; git ls-files --others --exclude-standard; } | sort -u
}

# The product headers to compile on their own: every one with `all`; otherwise those that
# changed since the base or include, directly or through other headers of this repository, a
# file that did (a header whose own text and includes are unchanged cannot stop compiling:
# the system headers are Debian's, fixed). The include graph is read from the text, which is
# instant, where asking the compiler would cost what the check costs.
header_units() {
  local scope=$1 changed
  sources "${product_dirs[@]}" | grep -E '\.h$' >"$2"
  changed=$(changed_since_base)
  [[ $scope == all || $changed == all ]] && return
  sources "${product_dirs[@]}" | grep -E '\.h$' | xargs -r grep -HoE '^#include "hark/[^"]+"' |
    sed -E 's/:#include "hark\/(.*)"$/ \1/' | awk -v changed="$changed" '
      BEGIN { n = split(changed, list, "\n"); for (i = 1; i <= n; i++) dirty[list[i]] = 1 }
      { includers[$2] = includers[$2] " " $1; files[$1] = 1 }
      END {
        # Spread "dirty" from each changed file to its includers until nothing changes.
        do {
          grew = 0
          for (f in dirty) {
            m = split(includers[f], by, " ")
            for (i = 1; i <= m; i++) if (!(by[i] in dirty)) { dirty[by[i]] = 1; grew = 1 }
          }
        } while (grew)
        for (f in dirty) print f
      }' | grep -Fx -f - "$2" >"$2.dirty"
  mv "$2.dirty" "$2"
}

check_headers() {
  local flags failures includes scope=${1:-changed}
  # Includes are written "hark/core/...": the root is found as hark/, as the build does.
  includes=$(mktemp -d)
  trap 'rm -rf "$includes"' RETURN
  ln -s "$PWD" "$includes/hark"
  header_units "$scope" "$includes/units"
  echo "headers: $(grep -c . "$includes/units") of $(sources "${product_dirs[@]}" | grep -cE '\.h$') ($scope since $(cat tools/tidy-base.txt 2>/dev/null || echo 'no base'))"
  flags="-std=c++20 -fsyntax-only -Wall -Wextra -Werror -I$includes $(pkg-config --cflags liburing libxxhash)"
  failures=$(cat "$includes/units" |
    xargs -r -P "$jobs" -I{} sh -c \
      "echo '#include \"{}\"' | g++ $flags -x c++ - >/dev/null 2>&1 || echo {}")
  if [[ -n $failures ]]; then
    echo "headers that do not compile on their own:"; echo "$failures"; return 1
  fi
}

# The translation units tidy checks: every one with `all`; otherwise only those whose source or
# any file of this repository they include (ninja's depfile record of the build, so the build
# must have run) changed since the commit in tools/tidy-base.txt, a commit at which the whole
# check passed. A TU nothing changed in cannot have gained a finding, and parsing every TU is
# most of CI's release stage (docs/build.md §Lint). A base that is not an ancestor of HEAD, a
# changed .clang-tidy, or a build without depfiles checks every TU.
tidy_units() {
  local build_dir=$1 scope=$2 changed
  # Only what this build compiles: a TU of an optional target whose packages are missing (the
  # raft spike, bench/raft_spike/CMakeLists.txt) has no compile command to be checked with.
  grep -oE '"file": *"[^"]+"' "$build_dir/tidy/compile_commands.json" |
    sed -E 's/^"file": *"(.*)"$/\1/; s#^'"$PWD"'/##' | sort -u >"$build_dir/tidy/compiled"
  sources "${product_dirs[@]}" tools bench tests | grep -E '\.cc$' | grep -v '^tests/fuzz/' |
    grep -Fxf "$build_dir/tidy/compiled" >"$build_dir/tidy/all"
  changed=$(changed_since_base)
  if [[ $scope == all || $changed == all ]] || grep -qx '.clang-tidy' <<<"$changed"; then
    cat "$build_dir/tidy/all"; return
  fi
  ninja -C "$build_dir" -t deps 2>/dev/null | awk -v root="$PWD/" -v changed="$changed" '
    BEGIN { n = split(changed, list, "\n"); for (i = 1; i <= n; i++) touched[list[i]] = 1 }
    /^[^ ]/ { source = ""; hit = 0; next }
    /^    / {
      # Paths as the build wrote them: absolute, relative to the build directory, or through
      # its include/hark link to the checkout.
      file = $1; sub("^" root, "", file); sub(/^include\/hark\//, "", file)
      while (file ~ /^\.\.\//) sub(/^\.\.\//, "", file)
      if (source == "" && file ~ /\.cc$/) source = file
      if (file in touched && source != "" && !(source in printed)) { print source; printed[source] = 1 }
    }' | grep -Fxf "$build_dir/tidy/all"
}

check_tidy() {
  local build_dir=$1 scope=${2:-changed} output units
  # gcc's precompiled headers mean nothing to clang: drop them from the compile commands.
  mkdir -p "$build_dir/tidy"
  sed -E 's# -include [^ ]*cmake_pch\.hxx##g; s# -Winvalid-pch##g' \
    "$build_dir/compile_commands.json" >"$build_dir/tidy/compile_commands.json"
  units=$(tidy_units "$build_dir" "$scope")
  echo "tidy: $(grep -c . <<<"$units") of $(wc -l <"$build_dir/tidy/all") translation units ($scope since $(cat tools/tidy-base.txt 2>/dev/null || echo 'no base'))"
  output=$(xargs -r -P "$jobs" -n 4 clang-tidy-16 -p "$build_dir/tidy" --quiet \
             --extra-arg=-Wno-unknown-warning-option <<<"$units" 2>&1 |
           grep -E '(warning|error):' | sort -u)
  if [[ -n $output ]]; then echo "$output"; return 1; fi
}

case ${1:-} in
  format) check_format ;;
  layering) check_layering ;;
  banned) check_banned ;;
  headers) check_headers changed ;;
  headers-all) check_headers all ;;
  cites) check_cites ;;
  tidy) check_tidy "${2:?build dir}" changed ;;
  tidy-all) check_tidy "${2:?build dir}" all ;;
  *) echo "usage: $0 format|layering|banned|cites|headers|headers-all|tidy|tidy-all [build-dir]" >&2; exit 2 ;;
esac
