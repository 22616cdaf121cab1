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
    let inputs = [PathBuf::from(BIN), root.join("target/release/libdetpath.so"), root.join("packaging/debian/build-deb.sh")];
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

    let _purge = Purge;
    let t = Instant::now();
    run(Command::new("apt-get").args(["install", "-y", "-q", "--no-install-recommends"]).arg(&deb).env("DEBIAN_FRONTEND", "noninteractive"));
    let install_s = t.elapsed().as_secs_f64();
    println!("package {}: {size} bytes, apt-get install took {install_s:.1} s", deb.display());
    let files: Vec<String> = text(&run(Command::new("dpkg").args(["-L", "detpath"]))).lines().map(str::to_string).collect();
    assert!(files.len() > 40, "dpkg -L lists {} paths", files.len());

    // The command.
    let v = text(&run(Command::new("/usr/bin/detpath").arg("--version")));
    assert_eq!(v.trim(), format!("detpath {VERSION}"));

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
    let py = text(&run(Command::new("/usr/bin/python3").args(["-c", "import detpath; print(detpath.__file__)"]).current_dir("/").env_remove("PYTHONPATH")));
    assert!(py.trim().starts_with("/usr/lib/python3/dist-packages/detpath/"), "import detpath came from {py}");

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
    run(Command::new("/usr/bin/python3").args(["-c", "import detpath.results"]).current_dir("/").env_remove("PYTHONPATH"));

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
}
