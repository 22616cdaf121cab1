//! `detpath bench` (being written).
#[derive(clap::Args)]
pub struct Args {}
pub fn run(_a: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`detpath bench` is not written yet")
}
