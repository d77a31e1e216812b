#!/usr/bin/env bash
# What the browser and LaTeX tests need outside Python: Chromium, pdflatex and pdftotext.
# `make test` runs this first. Where they are missing it installs them with apt-get (as root, or
# through sudo without a password); where it cannot, it stops with one sentence saying what to
# install, so the suite never passes with the browser or the LaTeX export untested.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v pdflatex >/dev/null || need+=(texlive-latex-base texlive-latex-recommended)
command -v pdftotext >/dev/null || need+=(poppler-utils)   # reads the sandboxed LaTeX's PDF back
[ ${#need[@]} -eq 0 ] && exit 0

sudo_cmd=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo_cmd="sudo -n"; else sudo_cmd="none"; fi
fi
if [ "$sudo_cmd" = none ] || ! command -v apt-get >/dev/null; then
  echo "make test: the browser and LaTeX tests need ${need[*]} (Debian package names; Chromium at" \
       "/usr/bin/chromium), and this script can install them only with apt-get as root: install them," \
       "then run make test again." >&2
  exit 1
fi
echo "make test: installing ${need[*]} with apt-get (the browser and LaTeX tests need them)"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -q
$sudo_cmd apt-get install -y -q --no-install-recommends "${need[@]}"
