//! Transmit helpers shared by writers and readers: the context every
//! protocol action gets (own prefix, the one transmit buffer, the outbox,
//! the counters) and a sender that packs submessages into as few datagrams
//! as fit, starting a new datagram when one is full.

use super::outbox::Outbox;
use super::Counters;
use crate::priority::TxMark;
use crate::wire::Addr;
use crate::wire::{GuidPrefix, MessageBuilder, VendorId, WireError};

/// What a protocol action needs to send.
pub(crate) struct Ctx<'a> {
    pub prefix: GuidPrefix,
    pub tx: &'a mut [u8],
    pub out: &'a mut dyn Outbox,
    pub counters: &'a mut Counters,
    /// The mark of what is sent now: the writer's whose datagrams these
    /// are (a reader's to a writer: that writer's announced priority's);
    /// every protocol action that sends sets it first.
    pub mark: TxMark,
}

impl<'a> Ctx<'a> {
    /// A context that sends unmarked (discovery) until an action sets its mark.
    pub fn new(prefix: GuidPrefix, tx: &'a mut [u8], out: &'a mut dyn Outbox, counters: &'a mut Counters) -> Ctx<'a> {
        Ctx { prefix, tx, out, counters, mark: TxMark::NONE }
    }

    /// Sends the first `len` bytes of the transmit buffer.
    pub fn send(&mut self, dst: Addr, len: usize) {
        self.counters.tx_datagrams += 1;
        self.counters.tx_bytes += len as u64;
        self.out.send_marked(dst, &self.tx[..len], self.mark);
    }
}

/// Packs submessages for one destination into datagrams.
pub(crate) struct Sender<'c, 'a> {
    pub ctx: &'c mut Ctx<'a>,
    dst: Addr,
    dst_prefix: Option<GuidPrefix>,
    len: usize,
}

impl<'c, 'a> Sender<'c, 'a> {
    /// Datagrams to `dst`; with `dst_prefix`, each starts with INFO_DST.
    pub fn new(ctx: &'c mut Ctx<'a>, dst: Addr, dst_prefix: Option<GuidPrefix>) -> Sender<'c, 'a> {
        Sender { ctx, dst, dst_prefix, len: 0 }
    }

    fn start(&mut self) -> Result<(), WireError> {
        let mut b = MessageBuilder::new(self.ctx.tx, self.ctx.prefix, VendorId::DETPATH)?;
        if let Some(p) = self.dst_prefix {
            b.info_dst(p)?;
        }
        self.len = b.finish();
        Ok(())
    }

    /// Appends what `f` writes as one unit (e.g. INFO_TS + DATA); when it
    /// does not fit, sends what is there and retries in a fresh datagram.
    pub fn push(&mut self, f: impl Fn(&mut MessageBuilder<'_>) -> Result<(), WireError>) -> Result<(), WireError> {
        if self.len == 0 {
            self.start()?;
        }
        let mark = self.len;
        let mut b = MessageBuilder::resume(self.ctx.tx, self.len);
        match f(&mut b) {
            Ok(()) => {
                self.len = b.finish();
                Ok(())
            }
            Err(WireError::BufferFull) => {
                b.truncate(mark);
                let empty = {
                    let fresh = self.dst_prefix.map_or(crate::wire::message::HEADER_LEN, |_| crate::wire::message::HEADER_LEN + 16);
                    mark <= fresh
                };
                if empty {
                    return Err(WireError::BufferFull);
                }
                self.flush();
                self.start()?;
                let mut b = MessageBuilder::resume(self.ctx.tx, self.len);
                f(&mut b)?;
                self.len = b.finish();
                Ok(())
            }
            Err(e) => {
                b.truncate(mark);
                Err(e)
            }
        }
    }

    /// Sends the datagram being built, if it holds anything.
    pub fn flush(&mut self) {
        let header_only = self.dst_prefix.map_or(crate::wire::message::HEADER_LEN, |_| crate::wire::message::HEADER_LEN + 16);
        if self.len > header_only {
            let (dst, len) = (self.dst, self.len);
            self.ctx.send(dst, len);
        }
        self.len = 0;
    }
}

impl Drop for Sender<'_, '_> {
    fn drop(&mut self) {
        self.flush();
    }
}
