#!/usr/bin/env bash
# `make peers`: the reference implementations we compare against, pinned (eval/peers/NAME.txt),
# each in a virtual environment of its own under build/peers/NAME. An environment whose
# requirements file has not changed since it was installed is left as it is; a failed install
# names the environment, the package and pip's reason in one message and goes on with the others.
set -u
cd "$(dirname "$0")/../.."
ROOT=build/peers
PY=${PEERS_PYTHON:-/usr/bin/python3}
mkdir -p "$ROOT"
names=${*:-bilm-tf torch flair}
failed=()
for name in $names; do
  req=eval/peers/$name.txt
  [ -f "$req" ] || { echo "peers: no such peer '$name' (have: $(ls eval/peers/*.txt | xargs -n1 basename | sed 's/\.txt$//' | xargs))"; failed+=("$name"); continue; }
  env=$ROOT/$name
  stamp=$env/.installed
  want=$(sha256sum "$req" | cut -c1-16)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "peers: $name already installed ($env)"
  else
    echo "peers: installing $name into $env (pip; $(grep -v '^#' "$req" | xargs))"
    rm -f "$stamp"
    log=$ROOT/$name.install.log
    if ! { [ -x "$env/bin/python" ] || "$PY" -m venv "$env"; } >"$log" 2>&1 ||
       ! "$env/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >>"$log" 2>&1; then
      # pip's own words for what failed: the first ERROR line names the package and the reason.
      why=$(grep -m1 -E '^ERROR|No matching distribution|Failed building|error:' "$log" || tail -1 "$log")
      echo "peers: installing $name failed: $why (full log: $log)"
      failed+=("$name"); continue
    fi
    echo "$want" > "$stamp"
  fi
  # What is installed, with its version: the pinned packages of the requirements file.
  pkgs=$(grep -v '^#' "$req" | sed -E 's/[=<>!~ ].*//' | grep -v '^$')
  vers=$("$env/bin/python" -m pip list --disable-pip-version-check --format freeze 2>/dev/null |
    grep -iE "^($(echo $pkgs | tr ' ' '|' | sed 's/[-_]/[-_]/g'))==" | xargs)
  echo "peers: $name: $vers"
done
if [ ${#failed[@]} -gt 0 ]; then echo "peers: failed: ${failed[*]}"; exit 1; fi
