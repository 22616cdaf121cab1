//! `make install` and `make uninstall` on this machine, as a user runs them
//! (packaging/install.sh): everything goes under DESTDIR+PREFIX (the Python
//! module into the system python3's site directory for that prefix, or into a
//! venv), the printed `export` lines are what a user needs to import the
//! module and link a C program, and uninstall takes back exactly what the
//! manifest recorded. The system's site directories and /usr/local are
//! compared before and after: nothing there may change.
//!
//! Uses the build `make build` left in target/ (`make install` builds only
//! what is missing; these tests never start cargo).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");
const VERSION: &str = env!("CARGO_PKG_VERSION");
const SYSTEM_PYTHON: &str = "/usr/bin/python3";
const MANIFEST: &str = "share/detpath/install-manifest";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{}\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The build these tests install: present after `make build`.
fn built(test: &str) -> bool {
    let root = repo();
    let wheel = std::fs::read_dir(root.join("target/wheels"))
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with(&format!("detpath-{VERSION}-"))))
        .unwrap_or(false);
    let present = wheel && root.join("target/release/libdetpath.so").is_file() && root.join("target/release/libdetpath.a").is_file();
    detpath_testkit::need(test, "the release build and the wheel in target/", present, "run `make build` first")
        && detpath_testkit::need_tool(test, "make", "make")
        && detpath_testkit::need_tool(test, "pkg-config", "pkg-config")
        && detpath_testkit::need_tool(test, "cc", "gcc")
}

/// `make <args>` in the repository, with the user's search paths cleared so the printed exports are what counts.
fn make(args: &[String]) -> Output {
    run(Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(repo())
        .args(args)
        .env_remove("PYTHONPATH")
        .env_remove("PKG_CONFIG_PATH")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("MAKEFLAGS"))
}

/// The `export VAR=value` lines `make install` printed.
fn exports(out: &Output) -> BTreeMap<String, String> {
    stdout(out).lines().filter_map(|l| l.strip_prefix("export ")).filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn python_version(python: &str) -> String {
    stdout(&run(Command::new(python).args(["-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"]))).trim().to_string()
}

/// Where a file may be written by a stray install: /usr/local and every site directory of the system python3.
fn system_dirs() -> Vec<PathBuf> {
    let probe = "import site, sysconfig; print('\\n'.join(site.getsitepackages() + [sysconfig.get_path('purelib'), sysconfig.get_path('platlib')]))";
    let mut dirs: BTreeSet<PathBuf> = stdout(&run(Command::new(SYSTEM_PYTHON).args(["-c", probe]))).lines().map(PathBuf::from).collect();
    dirs.insert(PathBuf::from("/usr/local"));
    dirs.into_iter().filter(|d| d.is_dir()).collect()
}

/// Every entry under `dirs` (not following links): size, modification time, mode.
fn snapshot(dirs: &[PathBuf]) -> BTreeMap<PathBuf, (u64, i64, i64, u32)> {
    fn walk(p: &Path, into: &mut BTreeMap<PathBuf, (u64, i64, i64, u32)>) {
        let Ok(m) = std::fs::symlink_metadata(p) else { return };
        into.insert(p.to_path_buf(), (m.len(), m.mtime(), m.mtime_nsec(), m.mode()));
        if m.is_dir() {
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                walk(&e.path(), into);
            }
        }
    }
    let mut all = BTreeMap::new();
    for d in dirs {
        walk(d, &mut all);
    }
    all
}

fn assert_unchanged(what: &str, before: &BTreeMap<PathBuf, (u64, i64, i64, u32)>, after: &BTreeMap<PathBuf, (u64, i64, i64, u32)>) {
    let changed: Vec<String> = before
        .iter()
        .filter(|(p, v)| after.get(*p) != Some(v))
        .map(|(p, _)| format!("changed or removed: {}", p.display()))
        .chain(after.keys().filter(|p| !before.contains_key(*p)).map(|p| format!("added: {}", p.display())))
        .take(20)
        .collect();
    assert!(changed.is_empty(), "{what}:\n{}", changed.join("\n"));
}

/// Files (not directories) under `dir`, relative.
fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    snapshot(&[dir.to_path_buf()]).into_keys().filter(|p| !p.is_dir()).map(|p| p.strip_prefix(dir).unwrap().to_path_buf()).collect()
}

fn manifest_files(manifest: &Path, destdir: &Path) -> BTreeSet<PathBuf> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    text.lines().filter_map(|l| l.strip_prefix("file ")).map(|p| destdir.join(p.trim_start_matches('/'))).collect()
}

/// A C program that opens two kernel UDP endpoints on loopback and passes one datagram.
const C_PROGRAM: &str = r#"
#include <detpath.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	struct detpath_endpoint *a = detpath_open("udp://127.0.0.1:0"), *b = detpath_open("udp://127.0.0.1:0");
	struct detpath_addr at;
	char buf[64];
	if (!a || !b || detpath_local_addr(a, &at) != 0) {
		fprintf(stderr, "open: %s\n", detpath_last_error());
		return 1;
	}
	if (detpath_send_to(b, "installed", 9, at.ip, at.port) != 0) {
		fprintf(stderr, "send: %s\n", detpath_last_error());
		return 1;
	}
	long n = detpath_recv(a, buf, sizeof buf, 1000000, NULL);
	if (n != 9 || memcmp(buf, "installed", 9) != 0) {
		fprintf(stderr, "recv %ld: %s\n", n, detpath_last_error());
		return 1;
	}
	printf("libdetpath %s passed a datagram\n", detpath_version());
	detpath_close(a);
	detpath_close(b);
	return 0;
}
"#;

/// The installed module, imported as a user would (byte-code written, as root
/// without PYTHONDONTWRITEBYTECODE), passes one datagram on loopback; prints its file.
fn python_uses_module(python: &Path, pythonpath: Option<&str>) -> String {
    let script = "import detpath\n\
                  a, b = detpath.open('udp://127.0.0.1:0'), detpath.open('udp://127.0.0.1:0')\n\
                  b.send_to(b'installed', a.local_addr)\n\
                  got = a.recv(timeout=1.0)\n\
                  assert got is not None and got[0] == b'installed', got\n\
                  print(detpath.__file__)\n\
                  print(detpath.__version__)\n";
    let mut cmd = Command::new(python);
    cmd.args(["-c", script]).current_dir("/").env_remove("PYTHONPATH").env_remove("PYTHONDONTWRITEBYTECODE");
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    let out = stdout(&run(&mut cmd));
    let mut lines = out.lines();
    let (file, version) = (lines.next().unwrap_or("").to_string(), lines.next().unwrap_or(""));
    assert_eq!(version, VERSION, "{} imported detpath {version} from {file}", python.display());
    file
}

#[test]
fn prefix_install_stays_in_the_prefix_works_and_uninstall_empties_it() {
    if !built("prefix_install_stays_in_the_prefix_works_and_uninstall_empties_it") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().to_path_buf();
    let system = system_dirs();
    let before = snapshot(&system);

    let install = make(&["install".into(), format!("PREFIX={}", prefix.display())]);
    print!("{}", stdout(&install));
    let env = exports(&install);
    let site = prefix.join(format!("lib/python{}/dist-packages", python_version(SYSTEM_PYTHON)));
    assert_eq!(env.get("PYTHONPATH").map(PathBuf::from), Some(site.clone()), "the PYTHONPATH line of `make install`:\n{}", stdout(&install));
    assert_eq!(env.get("PKG_CONFIG_PATH").map(PathBuf::from), Some(prefix.join("lib/pkgconfig")));
    assert_eq!(env.get("LD_LIBRARY_PATH").map(PathBuf::from), Some(prefix.join("lib")));

    // Every file under the prefix is in the manifest, and the other way round.
    let manifest = prefix.join(MANIFEST);
    let listed = manifest_files(&manifest, Path::new("/"));
    let present: BTreeSet<PathBuf> = files_under(&prefix).into_iter().map(|p| prefix.join(p)).collect();
    assert_eq!(listed, present, "the manifest and the files under the prefix differ");
    for want in ["lib/libdetpath.so", "lib/libdetpath.a", "include/detpath.h", "lib/pkgconfig/detpath.pc"] {
        assert!(listed.contains(&prefix.join(want)), "{want} not installed");
    }
    assert!(site.join("detpath/__init__.py").is_file() && site.join(format!("detpath-{VERSION}.dist-info/METADATA")).is_file());

    // The module, with the printed PYTHONPATH.
    let file = python_uses_module(Path::new(SYSTEM_PYTHON), Some(&env["PYTHONPATH"]));
    assert_eq!(Path::new(&file), site.join("detpath/__init__.py"));

    // A C program, compiled and linked with the installed .pc, run with the printed LD_LIBRARY_PATH.
    let src = tmp.path().join("prog.c");
    std::fs::write(&src, C_PROGRAM).unwrap();
    let flags = stdout(&run(Command::new("pkg-config").args(["--cflags", "--libs", "detpath"]).env("PKG_CONFIG_PATH", &env["PKG_CONFIG_PATH"])));
    assert!(flags.contains(&format!("-I{}/include", prefix.display())) && flags.contains(&format!("-L{}/lib", prefix.display())), "pkg-config: {flags}");
    let exe = tmp.path().join("prog");
    run(Command::new("cc").arg(&src).arg("-o").arg(&exe).args(flags.split_whitespace()));
    let ran = stdout(&run(Command::new(&exe).env("LD_LIBRARY_PATH", &env["LD_LIBRARY_PATH"])));
    assert_eq!(ran.trim(), format!("libdetpath {VERSION} passed a datagram"));
    let ldd = stdout(&run(Command::new("ldd").arg(&exe).env("LD_LIBRARY_PATH", &env["LD_LIBRARY_PATH"])));
    assert!(ldd.contains(&format!("{}/lib/libdetpath.so", prefix.display())), "ldd: {ldd}");
    std::fs::remove_file(&src).unwrap();
    std::fs::remove_file(&exe).unwrap();

    // Installing again over the same prefix is the same install (one manifest, same files).
    make(&["install".into(), format!("PREFIX={}", prefix.display())]);
    assert_eq!(manifest_files(&manifest, Path::new("/")), listed);
    assert_unchanged("`make install PREFIX=<tmp>` wrote outside the prefix", &before, &snapshot(&system));

    let uninstall = make(&["uninstall".into(), format!("PREFIX={}", prefix.display())]);
    print!("{}", stdout(&uninstall));
    let left: Vec<_> = std::fs::read_dir(&prefix).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left under the prefix after `make uninstall`: {left:?}");
    assert_unchanged("`make uninstall PREFIX=<tmp>` changed something outside the prefix", &before, &snapshot(&system));
    // Nothing recorded any more: a second uninstall says so and removes nothing.
    let again = stdout(&make(&["uninstall".into(), format!("PREFIX={}", prefix.display())]));
    assert!(again.contains("nothing to remove"), "{again}");
}

#[test]
fn venv_install_goes_into_the_venv_and_uninstall_takes_it_back() {
    if !built("venv_install_goes_into_the_venv_and_uninstall_takes_it_back") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    // --without-pip: the venv's own interpreter and site directory are all this needs.
    run(Command::new(SYSTEM_PYTHON).args(["-m", "venv", "--without-pip"]).arg(&venv));
    let vpython = venv.join("bin/python");
    let vsite = venv.join(format!("lib/python{}/site-packages", python_version(SYSTEM_PYTHON)));
    let prefix = tmp.path().join("prefix");
    let system = system_dirs();
    let before = snapshot(&system);
    let venv_before = snapshot(std::slice::from_ref(&venv));

    let install = make(&["install".into(), format!("PREFIX={}", prefix.display()), format!("PYTHON={}", vpython.display())]);
    print!("{}", stdout(&install));
    let env = exports(&install);
    assert!(!env.contains_key("PYTHONPATH"), "a venv's own site directory needs no PYTHONPATH:\n{}", stdout(&install));
    assert!(vsite.join("detpath/__init__.py").is_file(), "the module is not in the venv's {}", vsite.display());
    assert!(
        !prefix.join("lib/python3").exists() && !prefix.join(format!("lib/python{}", python_version(SYSTEM_PYTHON))).exists(),
        "a venv install put the module under the prefix too"
    );
    let listed = manifest_files(&prefix.join(MANIFEST), Path::new("/"));
    assert!(listed.contains(&vsite.join("detpath/__init__.py")) && listed.contains(&prefix.join("lib/libdetpath.so")), "manifest: {listed:?}");

    let file = python_uses_module(&vpython, None);
    assert_eq!(Path::new(&file), vsite.join("detpath/__init__.py"));
    assert_unchanged("a venv `make install` wrote outside the prefix and the venv", &before, &snapshot(&system));

    make(&["uninstall".into(), format!("PREFIX={}", prefix.display()), format!("PYTHON={}", vpython.display())]);
    assert!(!prefix.exists(), "the prefix make install created is still there after uninstall");
    // The venv is as it was, apart from the times of the directories that gained and lost detpath.
    let venv_after = snapshot(std::slice::from_ref(&venv));
    let before_paths: BTreeSet<_> = venv_before.keys().collect();
    let after_paths: BTreeSet<_> = venv_after.keys().collect();
    assert_eq!(before_paths, after_paths, "uninstall did not take the venv back to what it was");
    assert_unchanged("a venv `make uninstall` changed something outside the prefix and the venv", &before, &snapshot(&system));
}

#[test]
fn destdir_install_is_staged_and_uninstall_keeps_what_it_did_not_write() {
    if !built("destdir_install_is_staged_and_uninstall_keeps_what_it_did_not_write") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("stage");
    let args = |what: &str| vec![what.to_string(), "PREFIX=/usr/local".to_string(), format!("DESTDIR={}", stage.display())];
    let system = system_dirs();
    let before = snapshot(&system);

    let install = make(&args("install"));
    assert!(exports(&install).is_empty(), "a staged install prints no export lines:\n{}", stdout(&install));
    let pc = std::fs::read_to_string(stage.join("usr/local/lib/pkgconfig/detpath.pc")).unwrap();
    assert!(pc.contains("prefix=/usr/local\n"), "the .pc names the final prefix, not the stage:\n{pc}");
    let manifest = stage.join("usr/local").join(MANIFEST);
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("file /usr/local/lib/libdetpath.so\n"), "{text}");
    let stage_text = stage.display().to_string();
    assert!(text.lines().filter(|l| !l.starts_with('#')).all(|l| !l.contains(&stage_text)), "manifest paths are the final ones, without DESTDIR:\n{text}");
    let listed = manifest_files(&manifest, &stage);
    let present: BTreeSet<PathBuf> = files_under(&stage).into_iter().map(|p| stage.join(p)).collect();
    assert_eq!(listed, present);
    assert_unchanged("a DESTDIR install wrote outside DESTDIR", &before, &snapshot(&system));

    // A file of the user's in a directory make install created stays, with its directories.
    let mine = stage.join("usr/local/lib/pkgconfig/mine.pc");
    std::fs::write(&mine, "not detpath's\n").unwrap();
    let uninstall = stdout(&make(&args("uninstall")));
    assert!(uninstall.contains("kept") && uninstall.contains("lib/pkgconfig"), "uninstall should say what it kept:\n{uninstall}");
    assert_eq!(files_under(&stage), BTreeSet::from([PathBuf::from("usr/local/lib/pkgconfig/mine.pc")]));
    assert!(!stage.join("usr/local/include").exists() && !stage.join("usr/local/share").exists());
}

#[test]
fn detpath_version_names_a_python_module_of_another_version() {
    let tmp = tempfile::tempdir().unwrap();
    // What an older install leaves on the path: a detpath module of another version.
    std::fs::create_dir(tmp.path().join("detpath")).unwrap();
    std::fs::write(tmp.path().join("detpath/__init__.py"), "__version__ = '0.0.1'\n").unwrap();
    let out = run(Command::new(BIN).arg("--version").env("PYTHONPATH", tmp.path()).env("PYTHONDONTWRITEBYTECODE", "1"));
    assert_eq!(stdout(&out).trim(), format!("detpath {VERSION}"), "stdout stays the version line alone");
    let err = String::from_utf8_lossy(&out.stderr);
    let file = tmp.path().join("detpath/__init__.py");
    assert!(err.contains("0.0.1") && err.contains(&file.display().to_string()) && err.contains(VERSION), "--version should name the other module: {err}");
    assert_eq!(err.lines().count(), 1, "one note per module file, however many pythons see it: {err}");
}
