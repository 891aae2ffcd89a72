# Sourced by scripts/test and scripts/demo: tesseract from the system's packages, then the
# project in .venv. Installs nothing that is already there.
# shellcheck shell=bash

if ! command -v tesseract >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null
    else
        echo "tesseract is missing: install it (macOS: brew install tesseract)" >&2
        exit 1
    fi
fi

PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e "${PIPELINE_EXTRAS:-.}" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" || true
