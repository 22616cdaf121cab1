//! The Debian package, installed and purged for real on this machine:
//! `apt-get install ./target/debian/detpath_<version>_<arch>.deb`, then the
//! installed command, man page, bash completion, Python module, pkg-config
//! file and systemd units are used as a user would, and `apt-get purge`
//! must leave none of the package's files behind.
//!
//! The package is made by `packaging/debian/build-deb.sh` (what `make deb`
//! runs after building) from the artifacts `make build` left in target/, when
//! there is no package yet or it is older than them. Prints the package size
//! and the install time. Needs root and dpkg/apt (Debian).
//!
//! The host need not be pristine: a `make install` into a prefix coexists
//! with the package (the test makes one in a temporary prefix and uses both),
//! and a copy of the Python module that shadows the package's (a pip or
//! `make install` into /usr/local, earlier on python3's path) is named by the
//! package at install time and by `detpath --version`. When the host has no
//! such copy, the test makes one with `make install PREFIX=/usr/local` and
//! removes it again with `make uninstall`; when it has one, the test uses it
//! and leaves it alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{}\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn mtime(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// The package, (re)built when missing or older than what goes into it.
fn package() -> PathBuf {
    let root = repo();
    let arch = text(&run(Command::new("dpkg").arg("--print-architecture"))).trim().to_string();
    let deb = root.join(format!("target/debian/detpath_{VERSION}_{arch}.deb"));
    let mut inputs = vec![PathBuf::from(BIN), root.join("target/release/libdetpath.so")];
    inputs.extend(std::fs::read_dir(root.join("packaging/debian")).unwrap().flatten().map(|e| e.path()));
    let stale = match mtime(&deb) {
        None => true,
        Some(made) => inputs.iter().any(|p| mtime(p).is_some_and(|t| t > made)),
    };
    if stale {
        let t = Instant::now();
        run(Command::new("packaging/debian/build-deb.sh").current_dir(&root));
        println!("built {} in {:.1} s", deb.display(), t.elapsed().as_secs_f64());
    }
    assert!(deb.is_file(), "{} was not made", deb.display());
    deb
}

fn installed() -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "detpath"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("ok installed"))
        .unwrap_or(false)
}

/// What /usr/bin/python3 finds for `import detpath` (found, not run), as a user's shell has it.
fn python_finds() -> Option<String> {
    let probe = "import importlib.util as u; s = u.find_spec('detpath'); print(s.origin if s else '')";
    let out = run(Command::new("/usr/bin/python3").args(["-I", "-c", probe]).current_dir("/"));
    Some(text(&out).trim().to_string()).filter(|s| !s.is_empty())
}

const PACKAGED: &str = "/usr/lib/python3/dist-packages/detpath/";

/// `make <what> PREFIX=<prefix>` in the repository (installs the build in target/, never builds).
fn make(what: &str, prefix: &Path) -> String {
    let out = run(Command::new("make").args(["-s", "-C"]).arg(repo()).arg(what).arg(format!("PREFIX={}", prefix.display())).env_remove("MAKEFLAGS"));
    text(&out) + &String::from_utf8_lossy(&out.stderr)
}

/// `make uninstall PREFIX=<prefix>` when the test ends, passed or not.
struct Uninstall(PathBuf);

impl Drop for Uninstall {
    fn drop(&mut self) {
        let _ = Command::new("make").args(["-s", "-C"]).arg(repo()).arg("uninstall").arg(format!("PREFIX={}", self.0.display())).output();
    }
}

/// Every path under `dir` (not following links).
fn paths_under(dir: &Path) -> std::collections::BTreeSet<PathBuf> {
    let mut all = std::collections::BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            todo.extend(std::fs::read_dir(&p).into_iter().flatten().flatten().map(|e| e.path()));
        }
        all.insert(p);
    }
    all
}

/// Purges the package when the test ends, passed or not.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        if installed() {
            let _ = Command::new("apt-get").args(["purge", "-y", "-q", "detpath"]).env("DEBIAN_FRONTEND", "noninteractive").output();
        }
    }
}

#[test]
fn install_use_and_purge_the_deb() {
    assert!(!installed(), "a `detpath` package is already installed here; this test installs and purges its own: `apt-get purge detpath` first");
    let deb = package();
    let size = std::fs::metadata(&deb).unwrap().len();
    let contents = text(&run(Command::new("dpkg-deb").arg("--contents").arg(&deb)));
    for want in [
        "./usr/bin/detpath",
        "./usr/lib/x86_64-linux-gnu/libdetpath.so",
        "./usr/lib/x86_64-linux-gnu/libdetpath.a",
        "./usr/lib/x86_64-linux-gnu/pkgconfig/detpath.pc",
        "./usr/include/detpath.h",
        "./usr/lib/python3/dist-packages/detpath/__init__.py",
        "./usr/share/man/man1/detpath-bench.1.gz",
        "./usr/share/man/man1/detpath-tune-apply.1.gz",
        "./usr/share/bash-completion/completions/detpath",
        "./usr/share/zsh/vendor-completions/_detpath",
        "./usr/lib/systemd/system/detpath-classify@.service",
        "./usr/lib/systemd/system/detpath-tune.service",
        "./usr/share/doc/detpath/copyright",
        "./usr/share/doc/detpath/LICENSE",
    ] {
        assert!(contents.lines().any(|l| l.ends_with(want)), "{} lacks {want}:\n{contents}", deb.display());
    }
    assert!(!contents.contains("detpath-generate"), "the hidden `generate` subcommand must get no man page");
    let control = text(&run(Command::new("dpkg-deb").args(["--field"]).arg(&deb).arg("Depends")));
    for lib in ["libelf1", "librte-eal23", "libc6"] {
        assert!(control.contains(lib), "Depends lacks {lib}: {control}");
    }

    // What shadows the package's module on this host before it is installed (an earlier pip or make install).
    let shadow = python_finds();
    if let Some(s) = &shadow {
        println!("NOTE: /usr/bin/python3 finds detpath at {s} before the package is installed: the package must name it");
    }
    // A prefix install beside the package (not on python3's path: it shadows nothing).
    let prefix = tempfile::tempdir().unwrap();
    let _prefix_install = Uninstall(prefix.path().to_path_buf());
    let said = make("install", prefix.path());
    let prefix_site =
        said.lines().find_map(|l| l.strip_prefix("export PYTHONPATH=")).unwrap_or_else(|| panic!("no PYTHONPATH line from make install:\n{said}")).to_string();

    let _purge = Purge;
    let t = Instant::now();
    let apt = run(Command::new("apt-get").args(["install", "-y", "-q", "--no-install-recommends"]).arg(&deb).env("DEBIAN_FRONTEND", "noninteractive"));
    let install_s = t.elapsed().as_secs_f64();
    let apt_said = text(&apt) + &String::from_utf8_lossy(&apt.stderr);
    match &shadow {
        Some(s) => assert!(
            apt_said.contains("detpath: note:") && apt_said.contains(s.as_str()),
            "the package should name the copy at {s} that shadows its module:\n{apt_said}"
        ),
        None => assert!(!apt_said.contains("detpath: note:"), "nothing shadows the module here, yet:\n{apt_said}"),
    }
    println!("package {}: {size} bytes, apt-get install took {install_s:.1} s", deb.display());
    let files: Vec<String> = text(&run(Command::new("dpkg").args(["-L", "detpath"]))).lines().map(str::to_string).collect();
    assert!(files.len() > 40, "dpkg -L lists {} paths", files.len());

    // The command.
    let v = run(Command::new("/usr/bin/detpath").arg("--version").env_remove("PYTHONPATH"));
    assert_eq!(text(&v).trim(), format!("detpath {VERSION}"));
    let note = String::from_utf8_lossy(&v.stderr).into_owned();
    match &shadow {
        Some(s) => assert!(note.contains(s.as_str()), "detpath --version should name the copy at {s}: {note:?}"),
        None => assert!(note.is_empty(), "detpath --version: {note}"),
    }

    // A man page, found by man-db through its normal search path.
    let man = run(Command::new("man").args(["-P", "cat", "detpath-bench"]).env("MANWIDTH", "100").env_remove("MANPATH"));
    let page = text(&man);
    assert!(page.contains("detpath bench") && page.contains("--matrix"), "man detpath-bench:\n{page}");

    // Bash completion: the installed script completes a subcommand name.
    let comp = text(&run(Command::new("bash").args([
        "-c",
        "source /usr/share/bash-completion/completions/detpath; complete -p detpath; \
         COMP_WORDS=(detpath tu); COMP_CWORD=1; COMP_LINE='detpath tu'; COMP_POINT=${#COMP_LINE}; \
         _detpath detpath tu detpath; printf '%s\\n' \"${COMPREPLY[@]}\"",
    ])));
    assert!(comp.lines().next().unwrap_or("").starts_with("complete ") && comp.contains(" detpath"), "complete -p: {comp}");
    assert!(comp.lines().any(|l| l.trim() == "tune"), "`detpath tu<TAB>` should offer `tune`: {comp}");

    // The Python module of the system python3, from the package's directory.
    // When an earlier copy shadows it (named above), its directory is taken off the path to reach the package's.
    let import = match &shadow {
        None => "import detpath; print(detpath.__file__)".to_string(),
        Some(s) => {
            let dir = Path::new(s).parent().and_then(Path::parent).unwrap().display().to_string();
            format!("import sys; sys.path = [p for p in sys.path if p.rstrip('/') != {dir:?}]; import detpath; print(detpath.__file__)")
        }
    };
    let py = text(&run(Command::new("/usr/bin/python3").args(["-c", &import]).current_dir("/").env_remove("PYTHONPATH")));
    assert!(py.trim().starts_with(PACKAGED), "import detpath came from {py}");
    // The prefix install is still what PYTHONPATH gives.
    let py =
        text(&run(Command::new("/usr/bin/python3").args(["-c", "import detpath; print(detpath.__file__)"]).current_dir("/").env("PYTHONPATH", &prefix_site)));
    assert!(py.trim().starts_with(&prefix_site), "with PYTHONPATH={prefix_site}, import detpath came from {py}");

    // A copy that shadows the package's, made here when the host has none: named by
    // `detpath --version` and by the package's postinst, then removed again.
    let usr_local = Path::new("/usr/local");
    if shadow.is_none() && !usr_local.join("share/detpath/install-manifest").exists() {
        let before = paths_under(usr_local);
        let undo = Uninstall(usr_local.to_path_buf());
        make("install", usr_local);
        let found = python_finds().unwrap_or_default();
        assert!(found.starts_with("/usr/local/") && !found.starts_with(PACKAGED), "after make install PREFIX=/usr/local, python3 finds {found}");
        let v = run(Command::new("/usr/bin/detpath").arg("--version").env_remove("PYTHONPATH").env_remove("PYTHONDONTWRITEBYTECODE"));
        let note = String::from_utf8_lossy(&v.stderr).into_owned();
        assert!(note.contains(&found) && note.contains("shadows"), "detpath --version should name {found}: {note:?}");
        let postinst = run(Command::new("/var/lib/dpkg/info/detpath.postinst").arg("configure").arg(""));
        let said = String::from_utf8_lossy(&postinst.stderr).into_owned();
        assert!(said.contains(&found), "the package's postinst should name {found}: {said:?}");
        drop(undo);
        assert_eq!(python_finds().as_deref().map(|f| f.starts_with(PACKAGED)), Some(true), "after make uninstall PREFIX=/usr/local");
        let after = paths_under(usr_local);
        assert_eq!(
            before.symmetric_difference(&after).collect::<Vec<_>>(),
            Vec::<&PathBuf>::new(),
            "make install/uninstall PREFIX=/usr/local left /usr/local changed"
        );
    }

    // pkg-config finds the C library in the multiarch directory.
    let pkg_config = |what: &str| text(&run(Command::new("pkg-config").args([what, "detpath"]).env_remove("PKG_CONFIG_PATH")));
    assert_eq!(pkg_config("--modversion").trim(), VERSION);
    assert!(pkg_config("--libs").contains("-ldetpath"));
    assert_eq!(pkg_config("--variable=libdir").trim(), "/usr/lib/x86_64-linux-gnu");

    // The systemd units, checked offline now that the binary and man pages they name exist
    // (this machine does not run systemd as PID 1). A template is verified through an instance.
    let units = std::env::temp_dir().join(format!("detpath-units-{}", std::process::id()));
    std::fs::create_dir_all(&units).unwrap();
    std::fs::copy("/usr/lib/systemd/system/detpath-classify@.service", units.join("detpath-classify@lo.service")).unwrap();
    std::fs::copy("/usr/lib/systemd/system/detpath-tune.service", units.join("detpath-tune.service")).unwrap();
    let verify = Command::new("systemd-analyze")
        .args(["verify", "--man=yes"])
        .arg(units.join("detpath-classify@lo.service"))
        .arg(units.join("detpath-tune.service"))
        .output()
        .expect("systemd-analyze (Debian's systemd package)");
    let _ = std::fs::remove_dir_all(&units);
    let complaints = String::from_utf8_lossy(&verify.stderr).into_owned() + &String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success() && complaints.trim().is_empty(), "systemd-analyze verify: {complaints}");

    // Python writes byte-code next to the module when imported as root: prerm must remove it.
    run(Command::new("/usr/bin/python3")
        .args(["-c", &import.replace("print(detpath.__file__)", "import detpath.results")])
        .current_dir("/")
        .env_remove("PYTHONPATH")
        .env_remove("PYTHONDONTWRITEBYTECODE"));
    assert!(Path::new(PACKAGED).join("__pycache__").is_dir(), "python3 wrote no byte-code beside the package's module");

    let t = Instant::now();
    run(Command::new("apt-get").args(["purge", "-y", "-q", "detpath"]).env("DEBIAN_FRONTEND", "noninteractive"));
    println!("apt-get purge took {:.1} s", t.elapsed().as_secs_f64());
    assert!(!installed(), "still installed after purge");
    // Every path the package owned is gone, except directories other packages share (/usr/bin ...).
    let left: Vec<&String> = files
        .iter()
        .filter(|f| {
            let p = Path::new(f.as_str());
            match std::fs::symlink_metadata(p) {
                Err(_) => false,
                Ok(m) if m.is_dir() => f.contains("detpath"),
                Ok(_) => true,
            }
        })
        .collect();
    assert!(left.is_empty(), "left behind after purge: {left:?}");
    assert!(!Path::new("/usr/lib/python3/dist-packages/detpath").exists());
    // The prefix install outlived the package.
    let py =
        text(&run(Command::new("/usr/bin/python3").args(["-c", "import detpath; print(detpath.__file__)"]).current_dir("/").env("PYTHONPATH", &prefix_site)));
    assert!(py.trim().starts_with(&prefix_site), "after the purge, with PYTHONPATH={prefix_site}, import detpath came from {py}");
}
