#!/usr/bin/env bash
# The desktop app's system dependencies on Debian/Ubuntu: WebKitGTK and GTK to build and run
# it, and the system libraries it links (OpenSSL for TLS, SQLite, libdbus for the Secret
# Service); Xvfb, WebKitWebDriver and python3-xlib (closing the window as a user would) for its
# end-to-end tests; pip for fetching the default model.
# Installs what is missing with apt when run as root (or through sudo); checks Node.
set -euo pipefail

packages=(libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libssl-dev libsqlite3-dev libdbus-1-dev pkg-config build-essential xvfb xauth webkit2gtk-driver python3-xlib python3-pip)

if command -v dpkg-query >/dev/null; then
  missing=()
  for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
  done
  if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]]; then
      apt=(apt-get)
    elif command -v sudo >/dev/null; then
      apt=(sudo apt-get)
    else
      echo "The app needs: ${missing[*]}. Install them with: apt-get install ${missing[*]}" >&2
      exit 1
    fi
    echo "Installing the app's system packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" update
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends "${missing[@]}"
  fi
elif ! pkg-config --exists webkit2gtk-4.1; then
  echo "The app needs WebKitGTK 4.1 and GTK 3 development files (webkit2gtk-4.1, gtk+-3.0)" >&2
  exit 1
fi

# Vite 8 needs Node 20.19 or newer.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' 2>/dev/null; then
  echo "The app's UI builds with Node.js 20.19 or newer (found: $(node --version 2>/dev/null || echo none)); install it from https://nodejs.org or your package manager" >&2
  exit 1
fi
