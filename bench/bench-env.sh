# Sourced (not run) by the render benches that build avatar-bench (bench/bench-faces.sh, bench/bench-formats.sh,
# bench/bench-helpers.sh): the repository as the working directory ($here), librdkafka's pkg-config path, the
# venv's Python ($python), the test photos ($corpus: AVATAR_TEST_CORPUS, default ../shared/corpus) and
# bench/results ($results, made).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
python="$here/.deps/venv/bin/python"
corpus="${AVATAR_TEST_CORPUS:-$here/../shared/corpus}"
results="$here/bench/results"
mkdir -p "$results"
