//! Builds the Fast DDS reference program (`crates/pubsub-bench/fastdds/`:
//! perf.cpp and its KeyedSeq.idl, compiled into this crate so an installed
//! `detpath` carries them) once per source: fastddsgen makes the type's C++
//! from the IDL, g++ links it against Fast DDS 2.9 (`-lfastrtps -lfastcdr`).
//!
//! The program goes into a cache directory keyed by a hash of the sources
//! and the compiler command: the cargo target directory's `fastdds-perf/`
//! when `detpath` runs from one, else `$XDG_CACHE_HOME/detpath` (or
//! `~/.cache/detpath`). A build happens in a private temporary directory
//! beside it and is renamed into place, so two runs never see half a build.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The program's source.
pub const PERF_CPP: &str = include_str!("../../fastdds/perf.cpp");
/// Its sample type (ddsperf's KeyedSeq).
pub const KEYED_SEQ_IDL: &str = include_str!("../../fastdds/KeyedSeq.idl");

/// What to install when Fast DDS or the compiler is missing.
pub const INSTALL_HINT: &str =
    "apt-get install libfastrtps-dev fastddsgen g++ (the Makefile's deps/apt-fastdds.txt; `make deps` installs them)";

/// The header whose presence says Fast DDS 2.9's development files are installed.
pub const FASTDDS_HEADER: &str = "/usr/include/fastdds/dds/domain/DomainParticipant.hpp";

const GPP_ARGS: [&str; 10] = ["-O2", "-std=c++17", "-o", "perf", "perf.cpp", "KeyedSeq.cxx", "KeyedSeqPubSubTypes.cxx", "-I.", "-lfastrtps", "-lfastcdr"];

/// What is missing to build the program (g++, fastddsgen, Fast DDS's
/// headers), each with the package to install; None when all is there.
pub fn missing() -> Option<String> {
    let mut gone = Vec::new();
    if !on_path("g++") {
        gone.push("g++");
    }
    if !on_path("fastddsgen") {
        gone.push("fastddsgen");
    }
    if !Path::new(FASTDDS_HEADER).is_file() {
        gone.push("Fast DDS 2.9's headers (libfastrtps-dev)");
    }
    (!gone.is_empty()).then(|| format!("the Fast DDS reference rows need {}: {INSTALL_HINT}", gone.join(", ")))
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// FNV-1a, 64 bits: a cache key that changes whenever a source byte or the
/// compiler command does (not a security boundary: the directory is ours).
fn source_hash() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [PERF_CPP, KEYED_SEQ_IDL, &GPP_ARGS.join(" ")] {
        for b in part.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The directory the builds are cached in (see the module docs).
pub fn cache_root() -> PathBuf {
    let exe = std::env::current_exe().ok();
    if let Some(target) = exe.as_deref().and_then(|e| e.ancestors().find(|a| a.join("CACHEDIR.TAG").is_file())) {
        return target.join("fastdds-perf");
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("detpath").join("fastdds-perf")
}

/// The built program (building it on the first call of a process when its
/// cache entry is missing); why not, with the package to install or the
/// compiler's output.
pub fn program() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(|| build_into(&cache_root())).clone()
}

fn build_into(root: &Path) -> Result<PathBuf, String> {
    if let Some(m) = missing() {
        return Err(m);
    }
    let dir = root.join(format!("{:016x}", source_hash()));
    let exe = dir.join("perf");
    if exe.is_file() {
        return Ok(exe);
    }
    std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let work = tempfile::Builder::new().prefix(".build-").tempdir_in(root).map_err(|e| format!("{}: {e}", root.display()))?;
    for (name, text) in [("perf.cpp", PERF_CPP), ("KeyedSeq.idl", KEYED_SEQ_IDL)] {
        std::fs::write(work.path().join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    let check = |what: &str, o: std::io::Result<Output>| -> Result<(), String> {
        let o = o.map_err(|e| format!("{what}: {e} ({INSTALL_HINT})"))?;
        if o.status.success() {
            return Ok(());
        }
        Err(format!("{what} failed ({}): {}{}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
    };
    check("fastddsgen KeyedSeq.idl", Command::new("fastddsgen").args(["-replace", "KeyedSeq.idl"]).current_dir(work.path()).output())?;
    check("g++ perf.cpp -lfastrtps -lfastcdr", Command::new("g++").args(GPP_ARGS).current_dir(work.path()).output())?;
    // Another run may have finished the same build meanwhile: then its copy stays.
    match std::fs::rename(work.path(), &dir) {
        Ok(()) => {
            // The directory is ours now (the temporary one's name is gone).
            let _ = work.keep();
            Ok(exe)
        }
        Err(_) if exe.is_file() => Ok(exe),
        Err(e) => Err(format!("{} -> {}: {e}", work.path().display(), dir.display())),
    }
}
