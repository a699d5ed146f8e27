#!/bin/sh
# devutil setup.sh: points git, pip, apt, npm, go, Docker and Hugging Face clients at one devutil
# instance and prints its Syncthing relay URI. devutil serves it at /setup.sh with that instance's
# URLs filled in (the settings block below). Every file it changes is backed up first and listed in
# a manifest under ~/.config/devutil; --undo puts each one back byte for byte. POSIX sh.
#
#   curl -fsSL <instance>/setup.sh | sh -s -- [--dry-run] TOOL...   (git pip apt npm go docker hf relay, or all)
#   curl -fsSL <instance>/setup.sh | sh -s -- --undo                (the files of the last run, as they were)
#
# Before it changes a tool it fetches one real file of that tool's upstream through devutil (the
# *_PROBE settings): a tool whose upstream devutil cannot reach is left as it was, and said so.
set -u

# @SETTINGS@

KNOWN='git pip apt npm go docker hf relay'
DRY=0
UNDO=0
WANT=''
ROOT=${DEVUTIL_SETUP_ROOT:-}
STATE=${XDG_CONFIG_HOME:-$HOME/.config}/devutil
MANIFEST=$STATE/setup-manifest
TAB=$(printf '\t')
STAMP=''
COUNT=0
TARGET=''
MARK_BEGIN='# >>> devutil setup >>>'
MARK_END='# <<< devutil setup <<<'

say() { printf '%s\n' "$*"; }
note() { printf 'devutil setup: %s\n' "$*" >&2; }
die() {
  note "$*"
  exit 1
}

usage() {
  cat <<EOF
Points your tools at the devutil instance $DEVUTIL_URL.

  curl -fsSL $DEVUTIL_URL/setup.sh | sh -s -- [--dry-run] TOOL...
  curl -fsSL $DEVUTIL_URL/setup.sh | sh -s -- --undo

Tools this instance serves: ${DEVUTIL_TOOLS:-none}  (or: all)
  git     url.<proxy>.insteadOf https://github.com/ in your global git config
  pip     index-url in your pip.conf
  apt     Debian's hosts in /etc/apt sources (as root; otherwise prints what to do)
  npm     registry in ~/.npmrc
  go      GOPROXY in go env (go env -w)
  docker  registry-mirrors in /etc/docker/daemon.json (as root; otherwise prints what to do)
  hf      HF_ENDPOINT in ~/.profile
  relay   prints the Syncthing relay URI

  --dry-run  print every change, change nothing
  --undo     restore the files the last run changed (and remove those it created)
Backups and the manifest: $STATE
EOF
}

for arg in "$@"; do
  case $arg in
    --dry-run | -n) DRY=1 ;;
    --undo) UNDO=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    all) WANT="$WANT $DEVUTIL_TOOLS" ;;
    -*)
      usage >&2
      die "unknown option: $arg"
      ;;
    *)
      case " $KNOWN " in
        *" $arg "*) WANT="$WANT $arg" ;;
        *)
          usage >&2
          die "unknown tool: $arg"
          ;;
      esac
      ;;
  esac
done

WORK=$(mktemp -d 2>/dev/null) || die "cannot create a temporary directory"
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# --- backups, manifest, undo -------------------------------------------------------------------

# Creates directory $1 and its missing parents; prints each one it created, outermost first.
make_dirs() {
  md_d=$1
  md_missing=''
  while [ ! -d "$md_d" ]; do
    md_missing="$md_d
$md_missing"
    md_d=$(dirname "$md_d")
  done
  printf '%s' "$md_missing" | while IFS= read -r md_m; do
    [ -n "$md_m" ] || continue
    mkdir "$md_m" || exit 1
    printf '%s\n' "$md_m"
  done
}

# One manifest line: stamp, kind (file: it existed, backup; new: created; dir: created; state: the
# manifest's own directories), path, backup, cksum of what this run wrote.
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$STAMP" "$1" "$2" "$3" "$4" >>"$MANIFEST" || die "cannot write $MANIFEST"
}

begin_run() {
  [ -z "$STAMP" ] || return 0
  STAMP=$(date -u +%Y%m%dT%H%M%SZ)-$$
  br_made=$(make_dirs "$STATE") || die "cannot create $STATE"
  (umask 077 && mkdir -p "$STATE/backups/$STAMP") || die "cannot create $STATE/backups/$STAMP"
  printf '%s\n' "$br_made" | while IFS= read -r br_d; do
    [ -z "$br_d" ] || record state "$br_d" - -
  done
}

# stage FILE: $WORK/new gets FILE's bytes (empty when FILE does not exist), to be edited.
stage() {
  TARGET=$1
  if [ -f "$TARGET" ]; then
    cp "$TARGET" "$WORK/new" || die "cannot read $TARGET"
  else
    : >"$WORK/new"
  fi
}

# Replaces $WORK/new with $WORK/edit (the output of an edit).
edited() { mv "$WORK/edit" "$WORK/new" || die "cannot edit a temporary copy of $TARGET"; }

# commit TOOL: writes $WORK/new over TARGET when it differs, after backing TARGET up and listing it.
commit() {
  if [ -f "$TARGET" ] && cmp -s "$TARGET" "$WORK/new"; then
    say "$1: $TARGET is already set"
    return 0
  fi
  if [ "$DRY" = 1 ]; then
    cm_old=$TARGET
    [ -f "$TARGET" ] || cm_old=/dev/null
    say "$1: would change $TARGET:"
    if command -v diff >/dev/null 2>&1; then
      diff -u "$cm_old" "$WORK/new" | sed '1,2d'
    else
      cat "$WORK/new"
    fi
    return 0
  fi
  begin_run
  COUNT=$((COUNT + 1))
  cm_sum=$(cksum <"$WORK/new")
  if [ -e "$TARGET" ]; then
    cm_bk=$STATE/backups/$STAMP/$COUNT-$(basename "$TARGET")
    if ! cp "$TARGET" "$cm_bk" || ! cmp -s "$TARGET" "$cm_bk"; then
      die "cannot back up $TARGET; it was not changed"
    fi
    record file "$TARGET" "$cm_bk" "$cm_sum"
    cat "$WORK/new" >"$TARGET" || die "cannot write $TARGET (--undo restores it)"
    say "$1: changed $TARGET (backup $cm_bk)"
  else
    cm_dirs=$(make_dirs "$(dirname "$TARGET")") || die "cannot create the directory of $TARGET"
    printf '%s\n' "$cm_dirs" | while IFS= read -r cm_d; do
      [ -z "$cm_d" ] || record dir "$cm_d" - -
    done
    record new "$TARGET" - "$cm_sum"
    cat "$WORK/new" >"$TARGET" || die "cannot write $TARGET (--undo removes it)"
    say "$1: created $TARGET"
  fi
}

# Restores the files of the last run, newest change first; a file changed since that run is kept
# beside the manifest before it is restored.
undo() {
  [ -f "$MANIFEST" ] || {
    say "nothing to undo: no $MANIFEST"
    return 0
  }
  un_last=$(tail -n 1 "$MANIFEST" | cut -f 1)
  [ -n "$un_last" ] || die "$MANIFEST is empty"
  awk -F "$TAB" -v s="$un_last" '$1 == s' "$MANIFEST" | sed -n '1!G;h;$p' >"$WORK/undo"
  : >"$WORK/state-dirs"
  while IFS=$TAB read -r un_stamp un_kind un_path un_bk un_sum; do
    case $un_kind in
      file | new)
        if [ -e "$un_path" ] && [ "$(cksum <"$un_path")" != "$un_sum" ]; then
          un_keep=$STATE/changed-after-setup-$un_stamp-$(basename "$un_path")
          if [ "$DRY" = 1 ]; then
            say "$un_path changed after that run: would keep a copy in $un_keep"
          else
            cp "$un_path" "$un_keep" || die "cannot keep a copy of $un_path"
            note "$un_path changed after that run: a copy of it is in $un_keep"
          fi
        fi
        ;;
    esac
    case $un_kind in
      file)
        if [ "$DRY" = 1 ]; then
          say "would restore $un_path"
        else
          cat "$un_bk" >"$un_path" || die "cannot restore $un_path from $un_bk"
          say "restored $un_path"
        fi
        ;;
      new)
        if [ "$DRY" = 1 ]; then
          say "would remove $un_path (it did not exist)"
        else
          rm -f "$un_path" || die "cannot remove $un_path"
          say "removed $un_path"
        fi
        ;;
      dir) [ "$DRY" = 1 ] || rmdir "$un_path" 2>/dev/null || true ;;
      state) printf '%s\n' "$un_path" >>"$WORK/state-dirs" ;;
    esac
  done <"$WORK/undo"
  [ "$DRY" = 0 ] || return 0
  awk -F "$TAB" -v s="$un_last" '$1 != s' "$MANIFEST" >"$WORK/rest"
  rm -rf "$STATE/backups/$un_last"
  if [ -s "$WORK/rest" ]; then
    cat "$WORK/rest" >"$MANIFEST" || die "cannot rewrite $MANIFEST"
  else
    rm -f "$MANIFEST"
    rmdir "$STATE/backups" 2>/dev/null
    # The directories the first run made for the manifest, innermost first (read newest first).
    while IFS= read -r un_d; do rmdir "$un_d" 2>/dev/null; done <"$WORK/state-dirs"
  fi
  say "undone: the run of $un_last"
}

# --- reaching the instance ---------------------------------------------------------------------

fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --max-time 20 "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -T 20 -O - "$1"
  else
    note "neither curl nor wget is installed"
    return 127
  fi
}

# Each URL must answer with this very script (its DEVUTIL_URL line), not just answer: a captive
# portal or another server at that address must not get the tools' traffic.
check_reach() {
  for cr_u in $DEVUTIL_CHECK; do
    fetch "$cr_u" >"$WORK/check" 2>"$WORK/check.err" ||
      die "cannot reach $cr_u ($(head -n 1 "$WORK/check.err")); nothing was changed"
    grep -qxF "DEVUTIL_URL='$DEVUTIL_URL'" "$WORK/check" ||
      die "$cr_u did not answer as the devutil instance $DEVUTIL_URL; nothing was changed"
  done
}

# A private proxy's URLs carry its secret: from DEVUTIL_PROXY_SECRET, never from the script.
fill_secret() {
  [ "$DEVUTIL_PRIVATE" = 1 ] || return 0
  fs_s=${DEVUTIL_PROXY_SECRET:-}
  [ -n "$fs_s" ] || die "the proxy of $DEVUTIL_URL is private: run with DEVUTIL_PROXY_SECRET=<secret> set; nothing was changed"
  case $fs_s in
    *[!A-Za-z0-9_-]*) die "DEVUTIL_PROXY_SECRET has characters a proxy secret never has; nothing was changed" ;;
  esac
  GIT_URL=$(printf '%s' "$GIT_URL" | sed "s|<SECRET>|$fs_s|g")
  PIP_URL=$(printf '%s' "$PIP_URL" | sed "s|<SECRET>|$fs_s|g")
  APT_MAP=$(printf '%s' "$APT_MAP" | sed "s|<SECRET>|$fs_s|g")
  NPM_URL=$(printf '%s' "$NPM_URL" | sed "s|<SECRET>|$fs_s|g")
  GO_URL=$(printf '%s' "$GO_URL" | sed "s|<SECRET>|$fs_s|g")
  HF_URL=$(printf '%s' "$HF_URL" | sed "s|<SECRET>|$fs_s|g")
  GIT_PROBE=$(printf '%s' "$GIT_PROBE" | sed "s|<SECRET>|$fs_s|g")
  PIP_PROBE=$(printf '%s' "$PIP_PROBE" | sed "s|<SECRET>|$fs_s|g")
  APT_PROBE=$(printf '%s' "$APT_PROBE" | sed "s|<SECRET>|$fs_s|g")
  NPM_PROBE=$(printf '%s' "$NPM_PROBE" | sed "s|<SECRET>|$fs_s|g")
  GO_PROBE=$(printf '%s' "$GO_PROBE" | sed "s|<SECRET>|$fs_s|g")
  HF_PROBE=$(printf '%s' "$HF_PROBE" | sed "s|<SECRET>|$fs_s|g")
}

# --- each tool's way out -------------------------------------------------------------------------

# probe TOOL 'METHOD URL [Header: value]' [Header: value]: fetches one real file of TOOL's upstream
# through devutil. devutil answering (check_reach) is not enough: a network may let it answer and
# still keep it from the upstream, and a tool pointed at it would then fail until --undo. On
# failure it says which tool is skipped and why, adds it to SKIPPED and returns 1.
SKIPPED=''
probe() {
  pb_tool=$1
  pb_line=$2
  pb_more=${3:-}
  [ -n "$pb_line" ] || return 0
  pb_method=${pb_line%% *}
  pb_rest=${pb_line#* }
  pb_url=${pb_rest%% *}
  pb_hdr=''
  [ "$pb_rest" = "$pb_url" ] || pb_hdr=${pb_rest#* }
  : >"$WORK/probe"
  : >"$WORK/probe.err"
  if command -v curl >/dev/null 2>&1; then
    set -- -sS --max-time 60 -o "$WORK/probe" -w '%{http_code}'
    [ "$pb_method" != HEAD ] || set -- "$@" -I
    [ -z "$pb_hdr" ] || set -- "$@" -H "$pb_hdr"
    [ -z "$pb_more" ] || set -- "$@" -H "$pb_more"
    pb_code=$(curl "$@" "$pb_url" 2>"$WORK/probe.err") || pb_code=000
  else
    set -- -q -S -T 60 -O "$WORK/probe"
    [ "$pb_method" != HEAD ] || set -- "$@" --spider
    [ -z "$pb_hdr" ] || set -- "$@" --header="$pb_hdr"
    [ -z "$pb_more" ] || set -- "$@" --header="$pb_more"
    wget "$@" "$pb_url" 2>"$WORK/probe.err"
    pb_code=$(sed -n 's/^ *HTTP\/[0-9.]* \([0-9][0-9][0-9]\).*/\1/p' "$WORK/probe.err" | tail -n 1)
  fi
  case $pb_code in 2??) return 0 ;; esac
  if [ -z "$pb_code" ] || [ "$pb_code" = 000 ]; then
    pb_why=$(head -n 1 "$WORK/probe.err")
  else
    # devutil's own reason: the message of an error envelope, or the first line of a text one.
    pb_why=''
    if [ "$pb_method" != HEAD ]; then
      pb_first=$(head -n 1 "$WORK/probe" | cut -c 1-400)
      pb_why=$(printf '%s\n' "$pb_first" | sed -n -e 's/.*"error" *: *"\([^"]*\)".*/\1/p' -e 's/.*"message" *: *"\([^"]*\)".*/\1/p' -e 's/.*"msg" *: *"\([^"]*\)".*/\1/p' | head -n 1)
      [ -n "$pb_why" ] || pb_why=$pb_first
    fi
    pb_why="HTTP $pb_code${pb_why:+: $pb_why}"
  fi
  pb_shown=$(printf '%s' "$pb_url" | sed 's|/t/[^/]*/|/t/<SECRET>/|')
  note "$pb_tool: skipped, nothing changed: devutil could not fetch $pb_shown ($pb_why)"
  SKIPPED="$SKIPPED $pb_tool"
  return 1
}

# --- the tools ---------------------------------------------------------------------------------

# A file that exists and is writable, or one that does not and whose nearest directory is.
writable() {
  if [ -e "$1" ]; then
    [ -w "$1" ]
    return
  fi
  wr_d=$(dirname "$1")
  while [ ! -d "$wr_d" ]; do wr_d=$(dirname "$wr_d"); done
  [ -w "$wr_d" ]
}

do_git() {
  command -v git >/dev/null 2>&1 || {
    note "git: not installed; skipped"
    return 0
  }
  probe git "$GIT_PROBE" || return 0
  if [ -n "${GIT_CONFIG_GLOBAL:-}" ]; then
    stage "$GIT_CONFIG_GLOBAL"
  elif [ ! -f "$HOME/.gitconfig" ] && [ -f "${XDG_CONFIG_HOME:-$HOME/.config}/git/config" ]; then
    stage "${XDG_CONFIG_HOME:-$HOME/.config}/git/config"
  else
    stage "$HOME/.gitconfig"
  fi
  # Another mirror's rewrite of https://github.com/ would compete with this one: it goes.
  git config --file "$WORK/new" --get-regexp '^url\..*\.insteadof$' >"$WORK/rewrites" 2>/dev/null
  while IFS= read -r g_line; do
    g_key=${g_line%% *}
    [ "${g_line#* }" = https://github.com/ ] || continue
    g_sub=${g_key#url.}
    g_sub=${g_sub%.insteadof}
    [ "$g_sub" = "$GIT_URL" ] && continue
    git config --file "$WORK/new" --unset-all "url.$g_sub.insteadOf" '^https://github\.com/$' ||
      die "git: cannot edit a temporary copy of $TARGET"
  done <"$WORK/rewrites"
  if ! git config --file "$WORK/new" --get-all "url.$GIT_URL.insteadOf" 2>/dev/null | grep -qxF https://github.com/; then
    git config --file "$WORK/new" --add "url.$GIT_URL.insteadOf" https://github.com/ ||
      die "git: cannot edit a temporary copy of $TARGET"
  fi
  commit git
}

do_pip() {
  probe pip "$PIP_PROBE" || return 0
  if [ -n "${PIP_CONFIG_FILE:-}" ] && [ "$PIP_CONFIG_FILE" != /dev/null ]; then
    stage "$PIP_CONFIG_FILE"
  else
    stage "${XDG_CONFIG_HOME:-$HOME/.config}/pip/pip.conf"
  fi
  # index-url (and trusted-host for an http instance) right under [global], older index-url lines
  # there go; a command section's own index-url ([install], [download]) would win, so it gets this
  # one too; a trusted-host line in [global] gets this host added (pip refuses duplicate keys).
  URL=$PIP_URL HOST=$PIP_TRUSTED_HOST awk '
    function emit() {
      print "index-url = " ENVIRON["URL"]
      if (ENVIRON["HOST"] != "" && !th) print "trusted-host = " ENVIRON["HOST"]
      done = 1
    }
    FNR == NR {
      if ($0 ~ /^[ \t]*\[/) g = ($0 ~ /^[ \t]*\[global\][ \t]*$/)
      else if (g && $0 ~ /^[ \t]*trusted[-_]host[ \t]*[=:]/) {
        th = 1
        if (index(" " $0 " ", " " ENVIRON["HOST"] " ")) hashost = 1
      }
      next
    }
    FNR == 1 { g = 0 }
    /^[ \t]*\[/ {
      g = ($0 ~ /^[ \t]*\[global\][ \t]*$/)
      print
      if (g && !done) emit()
      next
    }
    /^[ \t]*index[-_]url[ \t]*[=:]/ { if (!g) print "index-url = " ENVIRON["URL"]; next }
    g && ENVIRON["HOST"] != "" && !hashost && /^[ \t]*trusted[-_]host[ \t]*[=:]/ { print $0 " " ENVIRON["HOST"]; hashost = 1; next }
    { print }
    END { if (!done) { if (NR > 0) print ""; print "[global]"; emit() } }
  ' "$WORK/new" "$WORK/new" >"$WORK/edit" || die "pip: cannot edit a temporary copy of $TARGET"
  edited
  commit pip
}

# key=value files (npm's): the first `key=` line gets the value, later ones go; appended if none.
set_line() {
  KEY=$1 LINE=$2 awk '
    { k = $0; sub(/^[ \t]*/, "", k) }
    index(k, ENVIRON["KEY"]) == 1 && substr(k, length(ENVIRON["KEY"]) + 1) ~ /^[ \t]*=/ {
      if (!done) print ENVIRON["LINE"]
      done = 1
      next
    }
    { print }
    END { if (!done) print ENVIRON["LINE"] }
  ' "$WORK/new" >"$WORK/edit" || die "cannot edit a temporary copy of $TARGET"
  edited
}

do_npm() {
  probe npm "$NPM_PROBE" || return 0
  stage "${NPM_CONFIG_USERCONFIG:-${npm_config_userconfig:-$HOME/.npmrc}}"
  set_line registry "registry=$NPM_URL"
  commit npm
}

do_go() {
  command -v go >/dev/null 2>&1 || {
    note "go: not installed; skipped (for one shell: export GOPROXY=$GO_URL)"
    return 0
  }
  probe go "$GO_PROBE" || return 0
  # In the temporary directory: a go.mod where this runs must not make go fetch a toolchain.
  go_file=$(cd "$WORK" && GOTOOLCHAIN=local go env GOENV 2>/dev/null)
  if [ -z "$go_file" ] || [ "$go_file" = off ]; then
    note "go: GOENV is off, so go env -w cannot be used; set GOPROXY=$GO_URL in your environment"
    return 0
  fi
  stage "$go_file"
  (cd "$WORK" && GOENV="$WORK/new" GOPROXY='' GOTOOLCHAIN=local go env -w "GOPROXY=$GO_URL") ||
    die "go: go env -w failed on a temporary copy of $TARGET"
  commit go
  [ -z "${GOPROXY:-}" ] || note "go: GOPROXY is set in your environment ($GOPROXY) and wins over go env: unset it"
}

do_hf() {
  probe hf "$HF_PROBE" || return 0
  stage "$HOME/.profile"
  # One marked block: replaced where it is, appended when missing.
  B=$MARK_BEGIN E=$MARK_END V="export HF_ENDPOINT='$HF_URL'" awk '
    function block() { print ENVIRON["B"]; print ENVIRON["V"]; print ENVIRON["E"]; done = 1 }
    $0 == ENVIRON["B"] { skip = 1; next }
    skip && $0 == ENVIRON["E"] { skip = 0; if (!done) block(); next }
    skip { next }
    { print }
    END { if (!done) block() }
  ' "$WORK/new" >"$WORK/edit" || die "hf: cannot edit a temporary copy of $TARGET"
  edited
  commit hf
  say "hf: for this shell: export HF_ENDPOINT='$HF_URL'"
  if [ -f "$HOME/.bash_profile" ] || [ -f "$HOME/.bash_login" ]; then
    say "hf: bash login shells read ~/.bash_profile (or ~/.bash_login) instead of ~/.profile: have it source ~/.profile"
  fi
}

docker_json() {
  if [ -n "$DOCKER_INSECURE" ]; then
    printf '{\n  "registry-mirrors": ["%s"],\n  "insecure-registries": ["%s"]\n}\n' "$DOCKER_MIRROR" "$DOCKER_INSECURE"
  else
    printf '{\n  "registry-mirrors": ["%s"]\n}\n' "$DOCKER_MIRROR"
  fi
}

docker_manual() {
  say "docker: $1. As root, put this in $ROOT/etc/docker/daemon.json (merged with what is there), then restart Docker:"
  docker_json | sed 's/^/  /'
  say "  or: curl -fsSL $DEVUTIL_URL/setup.sh | sudo sh -s -- docker"
}

do_docker() {
  d_file=$ROOT/etc/docker/daemon.json
  [ -d "$ROOT/etc/docker" ] || {
    note "docker: there is no $ROOT/etc/docker (is Docker installed?); skipped"
    return 0
  }
  # A private mirror answers only with a token of its own, got with the proxy's secret.
  d_auth=''
  if [ "$DEVUTIL_PRIVATE" = 1 ]; then
    if command -v curl >/dev/null 2>&1; then
      d_json=$(curl -fsS --max-time 30 -u "any:$DEVUTIL_PROXY_SECRET" "$DOCKER_MIRROR/v2/token" 2>/dev/null)
    else
      d_json=$(wget -q -T 30 --user=any --password="$DEVUTIL_PROXY_SECRET" -O - "$DOCKER_MIRROR/v2/token" 2>/dev/null)
    fi
    d_tok=$(printf '%s\n' "$d_json" | sed -n 's/.*"token" *: *"\([^"]*\)".*/\1/p')
    [ -z "$d_tok" ] || d_auth="Authorization: Bearer $d_tok"
  fi
  probe docker "$DOCKER_PROBE" "$d_auth" || return 0
  writable "$d_file" || {
    docker_manual "$d_file is not writable by you"
    return 0
  }
  stage "$d_file"
  if ! grep -q '[^[:space:]]' "$WORK/new"; then
    docker_json >"$WORK/new"
  elif command -v python3 >/dev/null 2>&1; then
    # Merging JSON needs a JSON parser: this mirror first, the others after it.
    python3 - "$WORK/new" "$DOCKER_MIRROR" "$DOCKER_INSECURE" <<'EOF' || die "docker: $TARGET is not a JSON object; it was not changed"
import json, sys
path, mirror, insecure = sys.argv[1:4]
with open(path) as f:
    d = json.load(f)
if not isinstance(d, dict):
    sys.exit(1)
d["registry-mirrors"] = [mirror] + [m for m in d.get("registry-mirrors", []) if m != mirror]
if insecure and insecure not in d.get("insecure-registries", []):
    d["insecure-registries"] = d.get("insecure-registries", []) + [insecure]
with open(path, "w") as f:
    json.dump(d, f, indent=2)
    f.write("\n")
EOF
  else
    docker_manual "merging into the existing $d_file needs python3"
    return 0
  fi
  commit docker
  [ "$DRY" = 1 ] || say "docker: restart Docker to use the mirror (systemctl restart docker)"
}

do_apt() {
  probe apt "$APT_PROBE" || return 0
  a_changed=0
  a_set=0
  a_denied=''
  for a_file in "$ROOT/etc/apt/sources.list" "$ROOT"/etc/apt/sources.list.d/*.list "$ROOT"/etc/apt/sources.list.d/*.sources; do
    [ -f "$a_file" ] || continue
    stage "$a_file"
    for a_pair in $APT_MAP; do
      a_host=${a_pair%%=*}
      a_re=$(printf '%s' "$a_host" | sed 's/\./\\./g')
      a_rep=$(printf '%s' "${a_pair#*=}" | sed 's/[\\&|]/\\&/g')
      grep -qF "${a_pair#*=}" "$WORK/new" && a_set=1
      sed -e "s|https\{0,1\}://$a_re/|$a_rep/|g" -e "s|https\{0,1\}://$a_re\$|$a_rep|" "$WORK/new" >"$WORK/edit" ||
        die "apt: cannot edit a temporary copy of $a_file"
      edited
    done
    cmp -s "$a_file" "$WORK/new" && continue
    a_changed=1
    if writable "$a_file" || [ "$DRY" = 1 ]; then
      commit apt
      writable "$a_file" || say "apt: (as root)"
    else
      a_denied="$a_denied $a_file"
    fi
  done
  if [ -n "$a_denied" ]; then
    say "apt: these sources name Debian's hosts but are not writable by you:$a_denied"
    say "  as root: curl -fsSL $DEVUTIL_URL/setup.sh | sudo sh -s -- apt"
  elif [ "$a_changed" = 0 ] && [ "$a_set" = 0 ]; then
    say "apt: no source in $ROOT/etc/apt names one of Debian's hosts; lines to use (change the release):"
    for a_pair in $APT_MAP; do
      case ${a_pair%%=*} in
        security.*) say "  deb ${a_pair#*=}/debian-security bookworm-security main" ;;
        *) say "  deb ${a_pair#*=}/debian bookworm main" ;;
      esac
    done
  elif [ "$a_changed" = 0 ]; then
    say "apt: the sources are already set"
  fi
  [ "$a_changed" = 0 ] || [ "$DRY" = 1 ] || [ -n "$a_denied" ] || say "apt: now run apt-get update"
}

do_relay() {
  say "relay: in Syncthing, Settings > Connections > Sync Protocol Listen Addresses: default, $RELAY_URI"
  case $RELAY_URI in
    *'<DEVICE_ID>'*) say "  the relay has not made its identity yet: the full URI is at $DEVUTIL_URL/rest/api/v1/relay" ;;
  esac
}

# --- main --------------------------------------------------------------------------------------

if [ "$UNDO" = 1 ]; then
  undo
  exit 0
fi
if [ -z "$WANT" ]; then
  usage >&2
  exit 2
fi
fill_secret
check_reach
[ "$DRY" = 0 ] || say "dry run: showing the changes, making none"
DONE=' '
for t in $WANT; do
  case $DONE in *" $t "*) continue ;; esac
  DONE="$DONE$t "
  case " $DEVUTIL_TOOLS " in
    *" $t "*) ;;
    *)
      note "$t: not served by $DEVUTIL_URL; skipped"
      continue
      ;;
  esac
  case $t in
    git) do_git ;;
    pip) do_pip ;;
    apt) do_apt ;;
    npm) do_npm ;;
    go) do_go ;;
    docker) do_docker ;;
    hf) do_hf ;;
    relay) do_relay ;;
  esac
done
if [ -n "$STAMP" ]; then
  say "done: $COUNT file(s) changed; to undo: curl -fsSL $DEVUTIL_URL/setup.sh | sh -s -- --undo"
fi
if [ -n "$SKIPPED" ]; then
  note "not set up:$SKIPPED (devutil could not fetch from their upstreams; see above)"
  exit 1
fi
