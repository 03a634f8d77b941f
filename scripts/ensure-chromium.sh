#!/usr/bin/env bash
# Makes sure a headless Chromium from Debian's packages is installed (the web view's browser tests drive it
# with playwright-core); prints its path. Idempotent: nothing is downloaded when it is there.
# Works as root; otherwise it uses sudo.
set -euo pipefail
for candidate in /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -x "$candidate" ]; then echo "$candidate"; exit 0; fi
done
sudo=()
if [ "$(id -u)" != 0 ]; then sudo=(sudo); fi
printf '[chromium] installing chromium from Debian packages\n' >&2
"${sudo[@]}" apt-get -o Acquire::Retries=3 update -qq >&2
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
echo /usr/bin/chromium
