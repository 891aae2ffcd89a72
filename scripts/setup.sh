# Sourced by scripts/test and scripts/demo: tesseract (and, for the tests, PgBouncer) from the
# system's packages, then the project in .venv. Installs nothing that is already there.
# shellcheck shell=bash

PY="${PYTHON:-python3}"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

apt_install() {
    command -v apt-get >/dev/null 2>&1 || return 1
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

missing=()
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
# The languages scanned pages are read in (English, French, German: see stages/ocr_language.py).
langs="$(tesseract --list-langs 2>/dev/null || true)"
for lang in eng fra deu; do
    printf '%s\n' "$langs" | grep -qx "$lang" || missing+=("tesseract-ocr-$lang")
done
# Only the tests run PgBouncer (scripts/test asks for the dev extras). Debian puts it in
# /usr/sbin, which is not on a normal user's PATH.
# The dashboard's browser tests drive Debian's headless Chromium through its chromedriver.
case "${PIPELINE_EXTRAS:-}" in
    *dev*) command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] \
        || missing+=(pgbouncer)
        [ -x /usr/bin/chromium ] || missing+=(chromium)
        [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
        # The OCR language tests render French and German with accents in DejaVu Sans.
        [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core) ;;
esac
if [ "${#missing[@]}" -gt 0 ]; then
    apt_install "${missing[@]}" || {
        echo "missing: ${missing[*]}: install them (macOS: brew install tesseract pgbouncer)" >&2
        exit 1
    }
fi

if [ ! -x .venv/bin/python ]; then
    # Debian ships venv's pip bootstrap separately (python3-venv).
    "$PY" -m venv .venv 2>/dev/null || {
        rm -rf .venv
        apt_install python3-venv && "$PY" -m venv .venv
    } || {
        echo "cannot create a virtualenv with $PY: install its venv module" >&2
        exit 1
    }
fi
# PIPELINE_EXTRAS: what to install, with which extras (default: every feature, not the tests').
# The filter drops a harmless warning about a missing local index; a failing pip still fails.
.venv/bin/python -m pip install -q --disable-pip-version-check -e "${PIPELINE_EXTRAS:-.[all]}" 2>&1 \
    | { grep -v "is ignored: it is neither a file nor a directory" || true; }
# mypy cannot follow the editable install's import hook: it reads the folders under their import
# names through these links (pyproject.toml's [tool.mypy] mypy_path).
mkdir -p .venv/typecheck
ln -sfn ../../pipeline .venv/typecheck/pg_pipeline
ln -sfn ../../stages .venv/typecheck/pg_pipeline_documents
