#!/usr/bin/env bash
# Runs the demo task end to end: a fresh copy of examples/slugify/repo as a git repository, the PRD
# examples/slugify/PRD.md, real Docker, the real codex binary, real git. With no OPENAI_API_KEY the model
# is the scripted one in examples/slugify/model-script.yaml, served locally by agent-runner itself; with a
# key (and OPENAI_BASE_URL for a non-OpenAI endpoint) the same command asks the real model.
# Prints the task note at the end. Exit code: agent-runner's (0 = COMPLETE).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
demo_dir="${AGENT_RUNNER_DEMO_DIR:-$(mktemp -d /tmp/agent-runner-demo.XXXXXX)}/slugify-demo"
rm -rf "$demo_dir"
mkdir -p "$demo_dir"
cp -R "$root/examples/slugify/repo/." "$demo_dir/"
cd "$demo_dir"
git init -q -b main
git -c user.name=demo -c user.email=demo@example.invalid add -A
git -c user.name=demo -c user.email=demo@example.invalid commit -q -m "Initial demo project"

args=(run --prd "$root/examples/slugify/PRD.md" --task-id DEMO-SLUGIFY)
if [ -z "${OPENAI_API_KEY:-}" ]; then
  echo "[demo] no OPENAI_API_KEY: using the scripted model (examples/slugify/model-script.yaml)" >&2
  args+=(--model-script "$root/examples/slugify/model-script.yaml")
fi
echo "[demo] repository: $demo_dir" >&2
status=0
node "$root/bin/agent-runner.js" "${args[@]}" || status=$?
note="$demo_dir/.agent-runner/task-DEMO-SLUGIFY.md"
if [ -f "$note" ]; then
  printf '\n================ %s ================\n\n' "$note"
  cat "$note"
fi
exit "$status"
