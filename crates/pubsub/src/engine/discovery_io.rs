//! The discovery half of the participant: SPDP announcements out and in,
//! SEDP announcements of local endpoints (through the built-in reliable
//! writers) and of remote ones (from the built-in readers), and matching.

use super::tx::Ctx;
use super::*;
use crate::discovery::status_info;
use crate::priority::TxMark;
use crate::qos::check_compatible;
use crate::wire::plist::{pid, ParamList, ParamWriter};
use crate::wire::{Data, Encapsulation, MessageBuilder};
use std::net::Ipv4Addr;

/// PL_CDR_LE encapsulation header.
const PL_CDR_LE: [u8; 4] = [0x00, 0x03, 0x00, 0x00];

/// The instance of an SEDP announcement in the SEDP writers' history: its
/// endpoint's GUID (PID_ENDPOINT_GUID), which is also its dispose's key hash.
pub(super) fn sedp_key(payload: &[u8], _key_only: bool) -> Option<[u8; 16]> {
    let (e, body) = Encapsulation::split(payload).ok()?;
    let v = ParamList::new(body, e.is_le()).find(pid::ENDPOINT_GUID)?;
    v.get(..16)?.try_into().ok()
}

/// The unicast address of `l` if this participant can reach it: the same
/// kind as `local` (UDPv4 or raweth), not a group or unspecified address.
pub(super) fn usable(local: Addr) -> impl Fn(&Locator) -> Option<Addr> {
    move |l| {
        let a = l.to_addr()?;
        let ok = local.same_kind(&a)
            && match a {
                Addr::Udp(u) => !u.ip().is_unspecified() && !u.ip().is_multicast() && *u.ip() != Ipv4Addr::BROADCAST,
                Addr::Eth(e) => !e.is_group() && e.mac != [0; 6],
            };
        ok.then_some(a)
    }
}

/// Where to reach a participant that announced `locators` in a datagram
/// from `src`: the announced locator on the source's IPv4 address, or else
/// (none of them is: a forged or corrupted announcement, or a host that
/// sends from another address than it announces) the source address with
/// the first announced port. An announcement cannot point this node's
/// traffic (SPDP replies, SEDP, heartbeats) at an arbitrary host, where an
/// unresolvable neighbour would stall the sender. True when the announced
/// locators were not used.
fn trusted(mut locators: impl Iterator<Item = Addr>, src: Addr) -> (Addr, bool) {
    let first = locators.next();
    let Some(first) = first else { return (src, false) };
    match (first, src) {
        (Addr::Udp(_), Addr::Udp(s)) => {
            let same = |a: &Addr| matches!(a, Addr::Udp(u) if u.ip() == s.ip());
            if same(&first) {
                return (first, false);
            }
            if let Some(a) = locators.find(same) {
                return (a, false);
            }
            let port = match first {
                Addr::Udp(u) => u.port(),
                Addr::Eth(_) => s.port(),
            };
            (Addr::Udp(std::net::SocketAddrV4::new(*s.ip(), port)), true)
        }
        _ => (first, false),
    }
}

impl Participant {
    /// Sends our SPDP announcement (or, with `dispose`, our goodbye) to `dst`.
    pub(super) fn send_spdp(&mut self, out: &mut dyn Outbox, dst: Addr, dispose: bool) {
        let me = Guid::new(self.cfg.guid_prefix, EntityId::PARTICIPANT);
        if self.spdp_payload.is_empty() {
            let pd = self.local_participant_data();
            let mut buf = vec![0u8; 1024 + pd.user_data.len()];
            let mut w = ByteWriter::new(&mut buf, true);
            let n = w.bytes(&PL_CDR_LE).and_then(|_| pd.write(&mut w)).map(|_| w.pos());
            if let Ok(n) = n {
                buf.truncate(n);
                self.spdp_payload = buf;
            }
        }
        let payload = &self.spdp_payload;
        let built = (|| -> Result<usize, WireError> {
            let mut b = MessageBuilder::new(&mut self.tx, self.cfg.guid_prefix, VendorId::DETPATH)?;
            if !dispose {
                b.data_bytes(EntityId::SPDP_READER, EntityId::SPDP_WRITER, SequenceNumber(1), None, payload)?;
            } else {
                let mut key = [0u8; 64];
                let n = {
                    let mut w = ByteWriter::new(&mut key, true);
                    w.bytes(&PL_CDR_LE)?;
                    let mut pw = ParamWriter::new(&mut w);
                    pw.bytes(pid::PARTICIPANT_GUID, &me.to_bytes())?;
                    pw.sentinel()?;
                    w.pos()
                };
                let mut ib = [0u8; 64];
                let qn = {
                    let mut w = ByteWriter::new(&mut ib, true);
                    let mut pw = ParamWriter::new(&mut w);
                    pw.bytes(pid::KEY_HASH, &me.to_bytes())?;
                    pw.bytes(pid::STATUS_INFO, &(status_info::DISPOSED | status_info::UNREGISTERED).to_be_bytes())?;
                    pw.sentinel()?;
                    w.pos()
                };
                b.data_raw(EntityId::SPDP_READER, EntityId::SPDP_WRITER, SequenceNumber(2), Some(&ib[..qn]), Some(&key[..n]), true)?;
            }
            Ok(b.finish())
        })();
        if let Ok(len) = built {
            let mut ctx = Ctx::new(self.cfg.guid_prefix, &mut self.tx, out, &mut self.counters);
            ctx.mark = self.cfg.priority.discovery();
            ctx.send(dst, len);
        }
    }

    /// An SPDP DATA: a new participant, a lease renewal, or a goodbye.
    /// Only a participant speaks for itself: the participant an announcement
    /// or a goodbye names must be its sender (the RTPS header's prefix, or
    /// INFO_SRC's), or any participant could end another's lease or move
    /// its locators. Refused ones are counted in `discovery_rejected`.
    pub(super) fn on_spdp(&mut self, now: u64, src: Addr, src_prefix: GuidPrefix, d: &Data<'_>) {
        let (status, key) = super::reader::inline_info(d.inline_qos);
        let gone = status & (status_info::DISPOSED | status_info::UNREGISTERED) != 0 || d.key_flag || d.payload.is_none();
        if gone {
            // A goodbye. It is taken once nothing more comes from the
            // participant for a moment: a corrupted announcement can look
            // like a goodbye, and must not end a session that is alive.
            let prefix = key.map(|k| Guid::from_bytes(k).prefix).unwrap_or(src_prefix);
            if prefix != src_prefix {
                self.counters.discovery_rejected += 1;
                return;
            }
            if let Some(rp) = self.remote_participants.iter_mut().find(|r| r.data.guid_prefix == prefix) {
                rp.disposed = true;
                rp.last_seen_ns = now;
            }
            return;
        }
        let Some(payload) = d.payload else { return };
        if let Some(rp) = self.remote_participants.iter_mut().find(|r| r.data.guid_prefix == src_prefix) {
            if rp.raw == payload {
                rp.last_seen_ns = now;
                rp.disposed = false;
                return;
            }
        }
        let parsed = Encapsulation::split(payload).map_err(crate::discovery::DiscoveryError::from).and_then(|(e, body)| {
            if !e.is_param_list() {
                return Err(crate::discovery::DiscoveryError::NotParamList(e.id));
            }
            ParticipantData::parse(&ParamList::new(body, e.is_le()))
        });
        let pd = match parsed {
            Ok(pd) => pd,
            Err(_) => {
                self.counters.discovery_rejected += 1;
                return;
            }
        };
        if pd.guid_prefix == self.cfg.guid_prefix {
            return;
        }
        if pd.guid_prefix != src_prefix || pd.domain_id.is_some_and(|dom| dom != self.cfg.domain_id) {
            self.counters.discovery_rejected += 1;
            return;
        }
        let (meta_addr, m1) = trusted(pd.metatraffic_unicast.iter().filter_map(usable(self.cfg.local)), src);
        let (default_addr, m2) = trusted(pd.default_unicast.iter().filter_map(usable(self.cfg.local)), src);
        let default_addr = if pd.default_unicast.is_empty() { meta_addr } else { default_addr };
        if m1 || m2 {
            self.counters.locators_untrusted += 1;
        }
        if let Some(rp) = self.remote_participants.iter_mut().find(|r| r.data.guid_prefix == pd.guid_prefix) {
            rp.last_seen_ns = now;
            rp.meta_addr = meta_addr;
            rp.default_addr = default_addr;
            rp.data = pd;
            rp.disposed = false;
            rp.raw.clear();
            rp.raw.extend_from_slice(payload);
            return;
        }
        let configured = self.is_configured_peer(src);
        if self.remote_participants.len() >= self.cfg.max_remote_participants && !self.evict_for(now, configured) {
            self.counters.discovery_over_limit += 1;
            return;
        }
        let prefix = pd.guid_prefix;
        let bes = pd.builtin_endpoints;
        let user_data = pd.user_data.clone();
        self.remote_participants.push(RemoteParticipant {
            data: pd,
            raw: payload.to_vec(),
            meta_addr,
            default_addr,
            last_seen_ns: now,
            added_ns: now,
            configured,
            disposed: false,
        });
        self.counters.participants_discovered += 1;
        self.push_event(Event::ParticipantDiscovered { prefix, user_data });
        // Its SEDP built-in endpoints are matched with ours at the next timeout.
        self.pending_builtin.push((prefix, bes, meta_addr));
        if !self.spdp_replies.contains(&meta_addr) {
            self.spdp_replies.push(meta_addr);
        }
    }

    /// Whether `src` is one of the peers the configuration sends SPDP to
    /// (same IPv4 address, or same MAC for raweth; any port).
    pub(super) fn is_configured_peer(&self, src: Addr) -> bool {
        self.cfg.spdp_targets.iter().any(|t| match (t, src) {
            (Addr::Udp(t), Addr::Udp(s)) => t.ip() == s.ip() && !t.ip().is_multicast(),
            (Addr::Eth(t), Addr::Eth(s)) => t.mac == s.mac && !t.is_group(),
            _ => false,
        })
    }

    /// The participant table is full: makes room for a newcomer by evicting
    /// the least recently seen participant that has announced no endpoint
    /// and is past its probation (forged announcements never announce
    /// endpoints; a real peer does within milliseconds). A configured peer
    /// may also evict any participant that is not configured. False when
    /// nobody may go: the newcomer is refused (and counted).
    fn evict_for(&mut self, now: u64, configured: bool) -> bool {
        let has_endpoints = |p: GuidPrefix| self.remote_endpoints.iter().any(|e| e.data.guid.prefix == p);
        let pick = |strict: bool| {
            self.remote_participants
                .iter()
                .filter(|r| !r.configured)
                .filter(|r| !strict || (!has_endpoints(r.data.guid_prefix) && now >= r.added_ns.saturating_add(PROBATION_NS)))
                .min_by_key(|r| (has_endpoints(r.data.guid_prefix), r.last_seen_ns))
                .map(|r| r.data.guid_prefix)
        };
        let victim = pick(true).or_else(|| if configured { pick(false) } else { None });
        let Some(prefix) = victim else { return false };
        self.counters.participants_evicted += 1;
        self.drop_participant(prefix, LostReason::Evicted);
        true
    }

    /// Matches our SEDP built-in endpoints with a new participant's.
    pub(super) fn match_builtin(&mut self, now: u64, out: &mut dyn Outbox, prefix: GuidPrefix, bes: u32, addr: Addr) {
        let mut ctx = Ctx::new(self.cfg.guid_prefix, &mut self.tx, out, &mut self.counters);
        let mark = self.cfg.priority.discovery();
        if bes & builtin::PUBLICATIONS_DETECTOR != 0 {
            self.writers[SEDP_PUB].add_proxy(&mut ctx, now, Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_READER), addr, true);
        }
        if bes & builtin::SUBSCRIPTIONS_DETECTOR != 0 {
            self.writers[SEDP_SUB].add_proxy(&mut ctx, now, Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_READER), addr, true);
        }
        if bes & builtin::PUBLICATIONS_ANNOUNCER != 0 {
            self.readers[SEDP_PUB].add_proxy(&mut ctx, now, Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_WRITER), addr, true, mark);
        }
        if bes & builtin::SUBSCRIPTIONS_ANNOUNCER != 0 {
            self.readers[SEDP_SUB].add_proxy(&mut ctx, now, Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_WRITER), addr, true, mark);
        }
    }

    fn endpoint_data_of_writer(&self, i: usize) -> EndpointData {
        let w = &self.writers[i];
        EndpointData {
            guid: w.guid,
            topic_name: w.topic.clone(),
            type_name: w.type_name.clone(),
            qos: w.qos.clone(),
            unicast: Vec::new(),
            data_representation: vec![repr::XCDR1],
            has_type_information: false,
        }
    }

    fn endpoint_data_of_reader(&self, i: usize) -> EndpointData {
        let r = &self.readers[i];
        EndpointData {
            guid: r.guid,
            topic_name: r.topic.clone(),
            type_name: r.type_name.clone(),
            qos: r.qos.clone(),
            unicast: Vec::new(),
            data_representation: vec![repr::XCDR1, repr::XCDR2],
            has_type_information: false,
        }
    }

    /// Announces new local endpoints (and deleted writers' and readers' disposes) through
    /// SEDP and matches them with what is known.
    pub(super) fn announce_pending(&mut self, now: u64, out: &mut dyn Outbox) {
        let builtin = std::mem::take(&mut self.pending_builtin);
        for (prefix, bes, addr) in builtin {
            self.match_builtin(now, out, prefix, bes, addr);
        }
        let gone = std::mem::take(&mut self.pending_disposals);
        for (n, &(which, g)) in gone.iter().enumerate() {
            if !self.sedp_dispose(now, out, which, g) {
                self.pending_disposals.extend_from_slice(&gone[n..]);
                break;
            }
        }
        let ws = std::mem::take(&mut self.pending_writers);
        for (n, &i) in ws.iter().enumerate() {
            let ed = self.endpoint_data_of_writer(i);
            if !self.sedp_write(now, out, SEDP_PUB, &ed) {
                // SEDP history full of unacknowledged announcements: the rest waits for acks.
                self.pending_writers.extend_from_slice(&ws[n..]);
                break;
            }
            for k in 0..self.remote_endpoints.len() {
                if !self.remote_endpoints[k].data.is_writer() {
                    self.try_match(now, out, Local::Writer(i), k);
                }
            }
        }
        let rs = std::mem::take(&mut self.pending_readers);
        for (n, &i) in rs.iter().enumerate() {
            let ed = self.endpoint_data_of_reader(i);
            if !self.sedp_write(now, out, SEDP_SUB, &ed) {
                self.pending_readers.extend_from_slice(&rs[n..]);
                break;
            }
            for k in 0..self.remote_endpoints.len() {
                if self.remote_endpoints[k].data.is_writer() {
                    self.try_match(now, out, Local::Reader(i), k);
                }
            }
        }
    }

    /// Writes an announcement; false when the SEDP history has no room yet.
    fn sedp_write(&mut self, now: u64, out: &mut dyn Outbox, which: usize, ed: &EndpointData) -> bool {
        let mut ctx = Ctx::new(self.cfg.guid_prefix, &mut self.tx, out, &mut self.counters);
        let ser = |w: &mut ByteWriter<'_>| -> Result<(), WireError> {
            w.bytes(&PL_CDR_LE)?;
            ed.write(w)
        };
        !matches!(self.writers[which].write(&mut ctx, now, None, &ser), Err(WriteError::HistoryFull | WriteError::TooManyInstances))
    }

    /// Writes the dispose of local endpoint `g` (disposed and unregistered,
    /// its GUID as key hash inline and as the serialized key, as CycloneDDS
    /// sends and reads them); false when the SEDP history has no room yet.
    fn sedp_dispose(&mut self, now: u64, out: &mut dyn Outbox, which: usize, g: Guid) -> bool {
        let mut key = [0u8; 32];
        let n = (|| -> Result<usize, WireError> {
            let mut w = ByteWriter::new(&mut key, true);
            w.bytes(&PL_CDR_LE)?;
            let mut pw = ParamWriter::new(&mut w);
            pw.bytes(pid::ENDPOINT_GUID, &g.to_bytes())?;
            pw.sentinel()?;
            Ok(w.pos())
        })();
        let Ok(n) = n else { return true };
        let mut ctx = Ctx::new(self.cfg.guid_prefix, &mut self.tx, out, &mut self.counters);
        let status = status_info::DISPOSED | status_info::UNREGISTERED;
        let res = self.writers[which].write_status(&mut ctx, now, None, g.to_bytes(), status, &key[..n]);
        !matches!(res, Err(WriteError::HistoryFull | WriteError::TooManyInstances))
    }

    /// What matching local endpoint `l` with remote endpoint `re` (of the
    /// other kind) gives: `None` when they are not of one topic and type, or
    /// the writer was deleted (nothing to match, nothing to report); else
    /// whether they match, with reliability or not, or the first thing that
    /// does not fit. The one place the matching rules are applied: first
    /// announcements, local endpoints announced later and re-announcements
    /// all go through it.
    fn verdict(&self, l: Local, re: &EndpointData) -> Option<Result<bool, Incompatible>> {
        match l {
            Local::Reader(ri) => {
                let r = &self.readers[ri];
                if r.deleted || r.topic != re.topic_name || r.type_name != re.type_name {
                    return None;
                }
                let repr_ok = matches!(re.data_representation.first(), Some(&repr::XCDR1) | Some(&repr::XCDR2));
                let res = check_compatible(&re.qos, &r.qos).and(if repr_ok { Ok(()) } else { Err(Incompatible::DataRepresentation) });
                Some(res.map(|()| r.is_reliable() && re.qos.reliability == Reliability::Reliable))
            }
            Local::Writer(wi) => {
                let w = &self.writers[wi];
                if w.deleted || w.topic != re.topic_name || w.type_name != re.type_name {
                    return None;
                }
                let repr_ok = re.data_representation.contains(&repr::XCDR1);
                let res = check_compatible(&w.qos, &re.qos).and(if repr_ok { Ok(()) } else { Err(Incompatible::DataRepresentation) });
                Some(res.map(|()| w.is_reliable() && re.qos.reliability == Reliability::Reliable))
            }
        }
    }

    /// Tries to match local endpoint `l` with remote endpoint `k`.
    fn try_match(&mut self, now: u64, out: &mut dyn Outbox, l: Local, k: usize) {
        let re = &self.remote_endpoints[k];
        let (remote, addr) = (re.data.guid, re.addr);
        match self.verdict(l, &re.data) {
            None => self.report_other_type(l, k),
            Some(Ok(reliable)) => self.add_match(now, out, l, remote, addr, reliable),
            Some(Err(reason)) => self.report_incompatible(l, remote, reason),
        }
    }

    /// Whether local endpoint `l` is matched with remote endpoint `g`, and
    /// if so whether with reliability.
    fn matched_with(&self, l: Local, g: Guid) -> Option<bool> {
        match l {
            Local::Reader(i) => self.readers[i].proxies.iter().find(|p| p.guid == g).map(|p| p.reliable),
            Local::Writer(i) => self.writers[i].proxies.iter().find(|p| p.guid == g).map(|p| p.reliable),
        }
    }

    /// Matches local endpoint `l` with remote endpoint `g` at `addr` (a new
    /// proxy) and says so ([`Event::ReaderMatched`], [`Event::WriterMatched`]).
    /// Nothing when they are matched already (a local endpoint created
    /// after the remote one was announced was matched with it then, and is
    /// offered it again when it is announced itself).
    fn add_match(&mut self, now: u64, out: &mut dyn Outbox, l: Local, g: Guid, addr: Addr, reliable: bool) {
        if self.matched_with(l, g).is_some() {
            return;
        }
        let mark = self.remote_writer_mark(g);
        let (clock, offered) = self.remote_writer_budget(g);
        let writer_durable = self.remote_endpoints.iter().find(|e| e.data.guid == g).is_some_and(|e| e.data.qos.durability >= crate::qos::Durability::TransientLocal);
        let mut ctx = Ctx::new(self.cfg.guid_prefix, &mut self.tx, out, &mut self.counters);
        let event = match l {
            Local::Reader(i) => {
                self.readers[i].add_proxy(&mut ctx, now, g, addr, reliable, mark);
                self.readers[i].set_budget(g, clock, offered);
                self.readers[i].set_writer_keeps_history(g, writer_durable);
                Event::ReaderMatched { reader: ReaderId(i), writer: g }
            }
            Local::Writer(i) => {
                self.writers[i].add_proxy(&mut ctx, now, g, addr, reliable);
                Event::WriterMatched { writer: WriterId(i), reader: g }
            }
        };
        self.push_event(event);
    }

    /// Unmatches local endpoint `l` from remote endpoint `g` (drops its
    /// proxy) and says so ([`Event::ReaderUnmatched`],
    /// [`Event::WriterUnmatched`]); nothing when they were not matched.
    fn unmatch(&mut self, l: Local, g: Guid) {
        let event = match l {
            Local::Reader(i) if self.readers[i].remove_proxies(|x| *x == g) > 0 => Event::ReaderUnmatched { reader: ReaderId(i), writer: g },
            Local::Writer(i) if self.writers[i].remove_proxies(|x| *x == g) > 0 => Event::WriterUnmatched { writer: WriterId(i), reader: g },
            _ => return,
        };
        self.push_event(event);
    }

    /// Reports ([`Event::UndecodableType`] with
    /// [`Undecodable::OtherTypeName`]) remote writer `k` when it writes
    /// local reader `l`'s topic under another type name: it is not matched,
    /// and the application learns why its reader hears nothing. Once per
    /// remote writer and announced type.
    fn report_other_type(&mut self, l: Local, k: usize) {
        let Local::Reader(i) = l else { return };
        let re = &self.remote_endpoints[k];
        let r = &self.readers[i];
        if i < FIRST_USER || r.deleted || re.undecodable_reported || !re.data.is_writer() || r.topic != re.data.topic_name || r.type_name == re.data.type_name {
            return;
        }
        let (writer, type_name) = (re.data.guid, re.data.type_name.clone());
        self.remote_endpoints[k].undecodable_reported = true;
        self.push_event(Event::UndecodableType { reader: ReaderId(i), writer, type_name, why: Undecodable::OtherTypeName });
    }

    /// Counts and reports ([`Event::IncompatibleQos`]) that local endpoint
    /// `l` and remote endpoint `g`, of one topic and type, do not match.
    fn report_incompatible(&mut self, l: Local, g: Guid, reason: Incompatible) {
        let local = match l {
            Local::Reader(i) => self.readers[i].guid,
            Local::Writer(i) => self.writers[i].guid,
        };
        self.counters.incompatible_qos += 1;
        self.push_event(Event::IncompatibleQos { local, remote: g, reason });
    }

    /// Remote endpoint `k` was announced again, differently from `old` (its
    /// QoS after a `set_qos`, e.g. its partitions, or its locators): each
    /// local endpoint of the other kind is matched with it again. One that
    /// now matches and was not matched is matched (as at a first
    /// announcement), one that no longer matches is unmatched (as at a
    /// dispose; with [`Event::IncompatibleQos`] when it is the QoS that no
    /// longer fits), one that stays matched keeps its proxy and its state,
    /// only the proxy's address follows the announcement (a proxy is made
    /// anew only if its reliability changes). An incompatibility is
    /// reported again only when it is not the one reported before.
    fn rematch(&mut self, now: u64, out: &mut dyn Outbox, k: usize, old: &EndpointData) {
        let (g, addr, is_writer) = {
            let re = &self.remote_endpoints[k];
            (re.data.guid, re.addr, re.data.is_writer())
        };
        let n = if is_writer { self.readers.len() } else { self.writers.len() };
        for i in FIRST_USER..n {
            let l = if is_writer { Local::Reader(i) } else { Local::Writer(i) };
            let verdict = self.verdict(l, &self.remote_endpoints[k].data);
            match (self.matched_with(l, g), verdict) {
                (Some(was_reliable), Some(Ok(reliable))) if was_reliable == reliable => self.set_proxy_addr(l, g, addr),
                (Some(_), Some(Ok(reliable))) => {
                    self.unmatch(l, g);
                    self.add_match(now, out, l, g, addr, reliable);
                }
                (None, Some(Ok(reliable))) => self.add_match(now, out, l, g, addr, reliable),
                (matched, verdict) => {
                    if matched.is_some() {
                        self.unmatch(l, g);
                    }
                    if verdict.is_none() {
                        self.report_other_type(l, k);
                    }
                    if let Some(Err(reason)) = verdict {
                        if self.verdict(l, old) != verdict {
                            self.report_incompatible(l, g, reason);
                        }
                    }
                }
            }
        }
    }

    /// What our readers send remote writer `g`: the mark of its announced
    /// TRANSPORT_PRIORITY (its DSCP alone when no class covers it here).
    fn remote_writer_mark(&self, g: Guid) -> TxMark {
        let prio = self.remote_endpoints.iter().find(|e| e.data.guid == g).map_or(0, |e| e.data.qos.transport_priority);
        self.cfg.priority.mark_or_dscp(prio)
    }

    /// Whether remote writer `g`'s clock agrees with ours (same host id
    /// in its participant's SPDP, or ours is synchronised), and the
    /// latency budget it offers.
    fn remote_writer_budget(&self, g: Guid) -> (ClockSync, i64) {
        let offered = self.remote_endpoints.iter().find(|e| e.data.guid == g).map_or(0, |e| e.data.qos.latency_budget_ns);
        let theirs = self.remote_participants.iter().find(|r| r.data.guid_prefix == g.prefix).and_then(|r| r.data.host_id);
        let clock = match (self.cfg.host_id, theirs) {
            (Some(a), Some(b)) if a == b => ClockSync::SameHost,
            _ if self.cfg.clock_synchronised => ClockSync::Synchronised,
            _ => ClockSync::Unsynchronised,
        };
        (clock, offered)
    }

    /// Points local endpoint `l`'s proxy of remote endpoint `g` at `addr`
    /// (and, for a remote writer, at its announced priority's mark and budget).
    fn set_proxy_addr(&mut self, l: Local, g: Guid, addr: Addr) {
        let mark = self.remote_writer_mark(g);
        let (clock, offered) = self.remote_writer_budget(g);
        match l {
            Local::Reader(i) => {
                self.readers[i].proxies.iter_mut().filter(|p| p.guid == g).for_each(|p| {
                    p.addr = addr;
                    p.mark = mark;
                });
                self.readers[i].set_budget(g, clock, offered);
            }
            Local::Writer(i) => self.writers[i].proxies.iter_mut().filter(|p| p.guid == g).for_each(|p| p.addr = addr),
        }
    }

    /// Processes what the SEDP built-in readers received.
    pub(super) fn process_sedp(&mut self, now: u64, out: &mut dyn Outbox) {
        for which in [SEDP_PUB, SEDP_SUB] {
            loop {
                let mut buf = std::mem::take(&mut self.sedp_scratch);
                buf.clear();
                let info = self.take_raw(ReaderId(which), |info, bytes| {
                    buf.extend_from_slice(bytes);
                    *info
                });
                match info {
                    Some(info) => {
                        self.on_sedp(now, out, which, &info, &buf, info.key_hash);
                        self.sedp_scratch = buf;
                    }
                    None => {
                        self.sedp_scratch = buf;
                        break;
                    }
                }
            }
        }
    }

    fn on_sedp(&mut self, now: u64, out: &mut dyn Outbox, which: usize, info: &SampleInfo, bytes: &[u8], key: Option<[u8; 16]>) {
        let gone = !info.valid_data || info.status_info & (status_info::DISPOSED | status_info::UNREGISTERED) != 0;
        let parsed = Encapsulation::split(bytes).map_err(crate::discovery::DiscoveryError::from).and_then(|(e, body)| {
            if !e.is_param_list() {
                return Err(crate::discovery::DiscoveryError::NotParamList(e.id));
            }
            Ok(ParamList::new(body, e.is_le()))
        });
        if gone {
            let guid = key.map(Guid::from_bytes).or_else(|| {
                let pl = parsed.as_ref().ok()?;
                let v = pl.find(pid::ENDPOINT_GUID)?;
                let b: [u8; 16] = v.get(..16)?.try_into().ok()?;
                Some(Guid::from_bytes(b))
            });
            match guid {
                // As for announcements (below): a participant disposes only its own endpoints.
                Some(g) if g.prefix != info.writer.prefix => self.counters.discovery_rejected += 1,
                Some(g) => self.drop_remote_endpoint(g),
                None => {}
            }
            return;
        }
        let ed = match parsed.and_then(|pl| EndpointData::parse(&pl)) {
            Ok(ed) => ed,
            Err(_) => {
                self.counters.discovery_rejected += 1;
                return;
            }
        };
        // Only a participant's own SEDP writer may announce its endpoints, and of the right kind.
        let kind_ok = if which == SEDP_PUB { ed.is_writer() } else { !ed.is_writer() };
        if ed.guid.prefix != info.writer.prefix || !kind_ok || ed.guid.entity.is_builtin() {
            self.counters.discovery_rejected += 1;
            return;
        }
        let Some(rp) = self.remote_participants.iter().find(|r| r.data.guid_prefix == ed.guid.prefix) else {
            self.counters.discovery_rejected += 1;
            return;
        };
        // An endpoint's own locator is held to the rule its participant's
        // were (`trusted`): on the participant's address, or that address
        // with the announced port. A forged or corrupted SEDP announcement
        // cannot point a matched writer's DATA or a reader's ACKNACKs at an
        // arbitrary host.
        let addr = if ed.unicast.is_empty() {
            rp.default_addr
        } else {
            let (addr, untrusted) = trusted(ed.unicast.iter().filter_map(usable(self.cfg.local)), rp.default_addr);
            self.counters.locators_untrusted += untrusted as u64;
            addr
        };
        if let Some(k) = self.remote_endpoints.iter().position(|e| e.data.guid == ed.guid) {
            // Announced again: CycloneDDS re-sends its announcements (an
            // unchanged one changes nothing), and announces an endpoint
            // anew when its QoS changes (`set_qos`: partitions) or its locators do.
            let re = &mut self.remote_endpoints[k];
            if re.data == ed && re.addr == addr {
                return;
            }
            let reported = re.undecodable_reported && re.data.type_name == ed.type_name;
            let old = std::mem::replace(re, RemoteEndpoint { data: ed, addr, undecodable_reported: reported });
            self.rematch(now, out, k, &old.data);
            return;
        }
        let mine = self.remote_endpoints.iter().filter(|e| e.data.guid.prefix == ed.guid.prefix).count();
        if self.remote_endpoints.len() >= self.cfg.max_remote_endpoints || mine >= self.endpoints_per_participant() {
            self.counters.discovery_over_limit += 1;
            return;
        }
        let is_writer = ed.is_writer();
        self.remote_endpoints.push(RemoteEndpoint { data: ed, addr, undecodable_reported: false });
        let k = self.remote_endpoints.len() - 1;
        if is_writer {
            for ri in FIRST_USER..self.readers.len() {
                self.try_match(now, out, Local::Reader(ri), k);
            }
        } else {
            for wi in FIRST_USER..self.writers.len() {
                self.try_match(now, out, Local::Writer(wi), k);
            }
        }
    }

    /// Remote endpoints one participant may have in the table: a quarter
    /// of it ([`ENDPOINT_SHARE`]), so that one participant announcing
    /// endpoints without end (forged SEDP, or a peer gone wrong) leaves
    /// room for three others at least, instead of locking every later
    /// peer out.
    fn endpoints_per_participant(&self) -> usize {
        (self.cfg.max_remote_endpoints / ENDPOINT_SHARE).max(1)
    }

    fn drop_remote_endpoint(&mut self, g: Guid) {
        self.remote_endpoints.retain(|e| e.data.guid != g);
        for i in FIRST_USER..self.writers.len() {
            self.unmatch(Local::Writer(i), g);
        }
        for i in FIRST_USER..self.readers.len() {
            self.unmatch(Local::Reader(i), g);
        }
    }
}

/// A local user endpoint, by its index in the writer or reader table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Local {
    Writer(usize),
    Reader(usize),
}
