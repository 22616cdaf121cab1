"""tools/api_snapshot.py notices API changes: real rustdoc on a small crate, changed, documented again.

    python3 -m pytest -q tools/test_api_snapshot.py      (make test runs it)
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_snapshot  # noqa: E402

BASE = """
//! A crate to snapshot.
/// A module.
pub mod shapes {
    /// A circle.
    pub struct Circle { /// Its radius.
        pub radius: f64, hidden: u8 }
    impl Circle {
        /// Its area.
        pub fn area(&self) -> f64 { self.radius * self.radius * 3.14 + self.hidden as f64 }
        /// Not public.
        pub(crate) fn internal(&self) {}
    }
    /// A free function.
    pub fn unit(scale: u32) -> Circle { Circle { radius: scale as f64, hidden: 0 } }
}
pub use shapes::unit;
/// Something with a name.
pub trait Named {
    /// The name.
    fn name(&self) -> String;
}
/// A colour.
pub enum Colour {
    /// Red.
    Red,
    /// Any other, by RGB.
    Rgb(u8, u8, u8),
}
"""


def document(tmp_path, source, out=None):
    """Runs rustdoc on source as crate `toy` (into a fresh directory unless out) and returns the snapshot."""
    out = out or tmp_path / f"doc{len(list(tmp_path.iterdir()))}"
    lib = tmp_path / "lib.rs"
    lib.write_text(source)
    subprocess.run(
        ["rustdoc", "--edition", "2021", "--crate-name", "toy", "--crate-type", "lib", "-o", str(out), str(lib)],
        check=True,
    )
    return api_snapshot.snapshot(str(out / "toy"))


def test_snapshot_lists_public_items_with_signatures(tmp_path):
    lines = document(tmp_path, BASE)
    assert "toy::shapes: mod" in lines
    assert "toy::shapes::Circle: pub fn area(&self) -> f64" in lines
    assert "toy::shapes::unit: pub fn unit(scale: u32) -> Circle" in lines
    assert "toy: pub use shapes::unit;" in lines
    assert any(line.startswith("toy::shapes::Circle: pub struct Circle { pub radius: f64,") for line in lines)
    assert "toy::shapes::Circle: impl Send for Circle" in lines
    assert "toy::Named: fn name(&self) -> String" in lines
    assert "toy::Colour: variant Rgb(u8, u8, u8)" in lines
    assert not any("internal" in line or "hidden" in line for line in lines)


def test_an_added_item_changes_the_snapshot(tmp_path):
    before = document(tmp_path, BASE)
    after = document(tmp_path, BASE + "/// New.\npub const LIMIT: u32 = 7;\n")
    assert sorted(set(after) - set(before)) == ["toy::LIMIT: pub const LIMIT: u32 = 7;"]
    assert not set(before) - set(after)


def test_a_changed_signature_changes_the_snapshot(tmp_path):
    before = document(tmp_path, BASE)
    after = document(tmp_path, BASE.replace("pub fn unit(scale: u32)", "pub fn unit(scale: u64)"))
    assert set(before) - set(after) == {"toy::shapes::unit: pub fn unit(scale: u32) -> Circle"}
    assert set(after) - set(before) == {"toy::shapes::unit: pub fn unit(scale: u64) -> Circle"}


def test_a_changed_trait_method_is_its_own_line(tmp_path):
    before = document(tmp_path, BASE)
    after = document(tmp_path, BASE.replace("fn name(&self) -> String;", "fn name(&self) -> &str;"))
    assert "toy::Named: fn name(&self) -> &str" in set(after) - set(before)
    assert "toy::Named: fn name(&self) -> String" in set(before) - set(after)


def test_a_removed_item_is_gone_though_its_old_page_stays(tmp_path):
    out = tmp_path / "doc"
    before = document(tmp_path, BASE + "/// Old.\npub fn old() {}\n", out)
    after = document(tmp_path, BASE, out)
    assert (out / "toy" / "fn.old.html").exists()  # rustdoc does not delete pages
    assert set(before) - set(after) == {"toy::old: pub fn old()"}


def test_an_added_trait_impl_and_a_widened_field_change_the_snapshot(tmp_path):
    before = document(tmp_path, BASE)
    changed = BASE.replace("pub struct Circle {", "#[derive(Clone)]\n    pub struct Circle {").replace(
        "hidden: u8 }", "pub hidden: u8 }")
    after = document(tmp_path, changed)
    added = set(after) - set(before)
    assert "toy::shapes::Circle: impl Clone for Circle" in added
    assert any("pub hidden: u8" in line for line in added)
