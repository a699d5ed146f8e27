// What the page hands to the tools people already have, filled in with this instance's URL: a
// ShareX custom uploader (.sxcu), a POSIX sh upload script (Flameshot pipes into it), QR codes.
import { renderSVG } from 'uqr';

/**
 * A ShareX custom uploader (ShareX 14+ syntax: {filename}, {response}, {header:name}): the file is
 * PUT as the body to /<name>; X-Url-File is the link (the body too, with the newline a terminal
 * wants), X-Url-Delete the delete link.
 */
export function sharexUploader(base: string): string {
  const host = new URL(base).host;
  const sxcu = {
    Version: '14.0.0',
    Name: `${host} (devutil)`,
    DestinationType: 'ImageUploader, TextUploader, FileUploader',
    RequestMethod: 'PUT',
    RequestURL: `${base}/{filename}`,
    Body: 'Binary',
    URL: '{header:X-Url-File}',
    DeletionURL: '{header:X-Url-Delete}',
    ErrorMessage: '{response}',
  };
  return `${JSON.stringify(sxcu, null, 2)}\n`;
}

/** The .sxcu's download name: ShareX's own convention is the host name. */
export const sharexFilename = (base: string) => `${new URL(base).host.replace(/[^A-Za-z0-9.-]/g, '_')}.sxcu`;

/** A single-quoted sh word. */
const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The upload script: each FILE (or standard input, named with -n) is PUT to the instance; the link
 * goes to standard output, the delete link to standard error. Names travel percent-encoded whole,
 * so spaces and Unicode survive whatever curl's version does with them.
 */
export function uploadScript(base: string): string {
  return `#!/bin/sh
# Uploads files to devutil (${base}) and prints each download link; delete links go to stderr.
#   sh upload.sh report.pdf notes.txt
#   flameshot gui --raw | sh upload.sh -n screenshot.png
#   sh upload.sh -d 7 -m 1 secret.tar      (Max-Days 7, Max-Downloads 1)
set -eu
base=${shQuote(base)}
name='' days='' downloads=''

usage() {
  echo 'usage: upload.sh [-d DAYS] [-m DOWNLOADS] [-n NAME] [FILE...]  (no FILE: standard input)' >&2
  exit 2
}

while getopts d:m:n:h opt; do
  case $opt in
    d) days=$OPTARG ;;
    m) downloads=$OPTARG ;;
    n) name=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))

# Every byte as %XX: a path segment that means the name exactly.
enc() {
  printf '%s' "$1" | od -An -v -tx1 | tr -d ' \\n' | sed 's/../%&/g'
}

headers=$(mktemp)
trap 'rm -f "$headers"' EXIT

# put SOURCE NAME: SOURCE is a file, or - for standard input.
put() {
  url="$base/$(enc "$2")"
  set -- -fsS -D "$headers" -T "$1"
  [ -z "$days" ] || set -- "$@" -H "Max-Days: $days"
  [ -z "$downloads" ] || set -- "$@" -H "Max-Downloads: $downloads"
  link=$(curl "$@" "$url")
  printf '%s\\n' "$link"
  printf 'delete: %s\\n' "$(tr -d '\\r' <"$headers" | sed -n 's/^[Xx]-[Uu][Rr][Ll]-[Dd][Ee][Ll][Ee][Tt][Ee]: *//p')" >&2
}

if [ $# -eq 0 ]; then
  put - "\${name:-stdin}"
else
  for f in "$@"; do
    put "$f" "\${name:-$(basename "$f")}"
  done
fi
`;
}

/** Longest text a QR code is made for: a link, not a document. */
export const QR_MAX_CHARS = 1024;

/** An SVG QR code of `text`: medium error correction, the 4-module quiet zone scanners expect. */
export function qrSvg(text: string): string {
  return renderSVG(text, { ecc: 'M', border: 4, pixelSize: 8 });
}
