//! `--wait`: how a pub-sub node's polling thread waits (apart from
//! vocab.rs, which the plan crate's tests build without pub-sub).

/// `--wait`'s values (`detpath pubsub` nodes and bench).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum WaitArg {
    /// Spin while the core is free, sleep between datagrams when it is shared.
    Adaptive,
    /// Spin on the ring or socket.
    Busy,
    /// Sleep in the kernel until something arrives.
    Block,
}

impl WaitArg {
    /// The wait, or blocking when `--blocking` says so.
    pub fn or_block(self, blocking: bool) -> detpath_pubsub::transport::Wait {
        match (blocking, self) {
            (true, _) | (_, WaitArg::Block) => detpath_pubsub::transport::Wait::Block,
            (_, WaitArg::Busy) => detpath_pubsub::transport::Wait::Busy,
            (_, WaitArg::Adaptive) => detpath_pubsub::transport::Wait::ADAPTIVE,
        }
    }
}
