//! The pcap driver: an interface whose wire is a pair of capture files.
//!
//! Rx side, node `pcap-input`: each poll copies up to 256 frames of the capture named by
//! `pcap.read` (pcap or pcapng, Ethernet) into fresh buffers at the full headroom, in file
//! order, as fast as the worker goes or paced to `pcap.rate-pps`. At the end of the file it
//! starts again (`pcap.loop`) or ends: the poll after the one that returned the last frames (so
//! once those have run through the graph) raises the port's `finished` flag, which is how
//! `vecflow run` knows a replay is complete. A capture that cannot be read further (cut
//! short, corrupt) ends the same way, with one warning. Frames it cannot use are dropped
//! under a named reason: larger than a buffer (`frame-too-long`), or on a pcapng interface
//! whose link type is not Ethernet (`not-ethernet`).
//!
//! Tx side, node `pcap-tx`: writes every frame it is given to the interface's `pcap.write`
//! file (one lock of the file per run of frames; workers share it), timestamped with the
//! time of writing, and counts it as transmitted; a frame the file refuses (disk full, say)
//! is dropped as `write-error`. Without a `pcap.write` the frames are counted and freed.
//!
//! This driver is for replaying and recording, not for speed: it does file I/O on the worker
//! (in 4 MiB reads and 1 MiB writes, not a system call per frame).

use crate::drivers::DriversWorker;
use crate::drivers::drops;
use crate::drivers::pace::Rate;
use crate::net::MAX_INTERFACES;
use crate::runtime::buffer::HEADROOM;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapParser, PcapWriter};
use pcap_file::pcapng::blocks::Block;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption};
use pcap_file::pcapng::{PcapNgParser, PcapNgWriter};
use pcap_file::{DataLink, Endianness, PcapError};
use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// Write buffer of a capture file.
const WRITE_BUFFER: usize = 1 << 20;
/// Read buffer of a capture file: the largest pcap record or pcapng block it can read.
const READ_BUFFER: usize = 4 << 20;
/// First four bytes of a pcapng file (its section header block type).
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// A file read in large chunks into one buffer, allocated once, that parsers work on.
struct Chunks {
    file: File,
    buf: Box<[u8]>,
    /// Unparsed bytes: `buf[pos..len]`.
    pos: usize,
    len: usize,
}

impl Chunks {
    /// Runs `parse` on the unparsed bytes, reading more of the file while it says they end
    /// too soon. `None` at the end of the file; an error when the file ends inside a record,
    /// a record does not fit the buffer, or `parse` rejects the bytes.
    fn parse<T>(
        &mut self,
        mut parse: impl for<'a> FnMut(&'a [u8]) -> Result<(&'a [u8], T), PcapError>,
    ) -> Result<Option<T>, String> {
        loop {
            let avail = &self.buf[self.pos..self.len];
            match parse(avail) {
                Ok((rest, value)) => {
                    self.pos = self.len - rest.len();
                    return Ok(Some(value));
                }
                Err(PcapError::IncompleteBuffer) => {
                    if self.pos == 0 && self.len == self.buf.len() {
                        return Err(format!("a record larger than {} MiB", READ_BUFFER >> 20));
                    }
                    self.buf.copy_within(self.pos..self.len, 0);
                    self.len -= self.pos;
                    self.pos = 0;
                    let n = self.file.read(&mut self.buf[self.len..]).map_err(|e| e.to_string())?;
                    if n == 0 {
                        return if self.len == 0 { Ok(None) } else { Err("cut short inside a record".into()) };
                    }
                    self.len += n;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// The format of a capture and its parser's state.
enum Format {
    Pcap(PcapParser),
    PcapNg {
        parser: PcapNgParser,
        /// Link type of each interface the current section has described so far.
        linktypes: Vec<DataLink>,
    },
}

/// An open capture being read.
struct Capture {
    chunks: Chunks,
    format: Format,
}

/// What the capture held next.
enum Next {
    /// An Ethernet frame of this many bytes, copied out.
    Frame(usize),
    /// A frame larger than the room given for it (not copied).
    TooLong,
    /// A frame of another link type (not copied).
    NotEthernet,
}

impl Capture {
    /// Opens `path`, pcap or pcapng (told apart by the first bytes); a pcap file must have the
    /// Ethernet link type.
    fn open(path: &Path) -> io::Result<Capture> {
        let mut chunks = Chunks { file: File::open(path)?, buf: vec![0; READ_BUFFER].into(), pos: 0, len: 0 };
        let format = read_header(&mut chunks).map_err(io::Error::other)?;
        Ok(Capture { chunks, format })
    }

    /// Goes back to the start of the file and reads its header again.
    fn restart(&mut self) -> Result<(), String> {
        self.chunks.file.rewind().map_err(|e| e.to_string())?;
        (self.chunks.pos, self.chunks.len) = (0, 0);
        self.format = read_header(&mut self.chunks)?;
        Ok(())
    }

    /// Copies the next frame into `out`, skipping pcapng blocks that hold none; `None` at the
    /// end of the file.
    fn next(&mut self, out: &mut [u8]) -> Result<Option<Next>, String> {
        loop {
            // `Some(None)`: a block that holds no frame.
            let next = match &mut self.format {
                Format::Pcap(parser) => {
                    self.chunks.parse(|s| parser.next_packet(s).map(|(rest, p)| (rest, Some(copy(&p.data, out)))))
                }
                Format::PcapNg { parser, linktypes } => self.chunks.parse(|s| {
                    let (rest, block) = parser.next_block(s)?;
                    let (interface, data) = match block {
                        Block::SectionHeader(_) => {
                            linktypes.clear();
                            return Ok((rest, None));
                        }
                        Block::InterfaceDescription(d) => {
                            linktypes.push(d.linktype);
                            return Ok((rest, None));
                        }
                        Block::EnhancedPacket(p) => (p.interface_id as usize, p.data),
                        Block::SimplePacket(p) => (0, p.data),
                        _ => return Ok((rest, None)),
                    };
                    let next = match linktypes.get(interface) {
                        Some(DataLink::ETHERNET) => copy(&data, out),
                        _ => Next::NotEthernet,
                    };
                    Ok((rest, Some(next)))
                }),
            }?;
            match next {
                Some(None) => continue,
                Some(Some(frame)) => return Ok(Some(frame)),
                None => return Ok(None),
            }
        }
    }
}

impl Capture {
    /// The length of the next frame, copied into `room`, or why it cannot be used
    /// (`frame-too-long`, `not-ethernet`); `None` at the end of the file.
    fn next_frame(&mut self, room: &mut [u8]) -> Result<Option<Result<usize, DropReason>>, String> {
        Ok(self.next(room)?.map(|next| match next {
            Next::Frame(len) => Ok(len),
            Next::TooLong => Err(drops::PCAP_FRAME_TOO_LONG),
            Next::NotEthernet => Err(drops::PCAP_NOT_ETHERNET),
        }))
    }
}

/// Reads the capture at `path` to its end as `pcap-input` does, each frame into `room` bytes,
/// and tells `each` what became of it: its length, or why it is dropped. An error when the
/// file is not a capture vecflow replays or cannot be read to its end (where `pcap-input`
/// ends the replay with a warning). The fuzz target `pcap` reads arbitrary files with it.
pub fn read_capture(path: &Path, room: usize, mut each: impl FnMut(Result<usize, DropReason>)) -> Result<(), String> {
    let mut capture = Capture::open(path).map_err(|e| e.to_string())?;
    let mut out = vec![0; room];
    while let Some(verdict) = capture.next_frame(&mut out)? {
        each(verdict);
    }
    Ok(())
}

/// Reads the header of a capture at the start of `chunks`: its format, and a parser for it.
fn read_header(chunks: &mut Chunks) -> Result<Format, String> {
    let format = chunks.parse(|s| match s.get(..4) {
        None => Err(PcapError::IncompleteBuffer),
        Some(m) if m == PCAPNG_MAGIC => {
            PcapNgParser::new(s).map(|(rest, parser)| (rest, Format::PcapNg { parser, linktypes: Vec::new() }))
        }
        Some(_) => PcapParser::new(s).map(|(rest, parser)| (rest, Format::Pcap(parser))),
    });
    match format {
        Ok(Some(Format::Pcap(p))) if p.header().datalink != DataLink::ETHERNET => {
            Err(format!("link type {:?}; only Ethernet captures can be replayed", p.header().datalink))
        }
        Ok(Some(f)) => Ok(f),
        Ok(None) => Err("empty: not a pcap or pcapng file".into()),
        Err(e) => Err(format!("not a pcap or pcapng file: {e}")),
    }
}

/// Copies `frame` to the front of `out` if it fits.
fn copy(frame: &[u8], out: &mut [u8]) -> Next {
    match out.get_mut(..frame.len()) {
        Some(o) => {
            o.copy_from_slice(frame);
            Next::Frame(frame.len())
        }
        None => Next::TooLong,
    }
}

/// The rx side of one pcap interface.
pub struct PcapPort {
    /// Interface index of what it receives.
    pub port: u16,
    path: PathBuf,
    /// `interfaces.NAME.pcap.read`, for messages.
    field: String,
    capture: Capture,
    looping: bool,
    rate: Option<Rate>,
    /// Frames read since the capture was last (re)opened.
    read_this_pass: u64,
    /// The read is over (set by the poll that hit the end).
    ended: bool,
    /// Raised by the first poll after the end: every frame has run through the graph.
    finished: Arc<AtomicBool>,
}

impl PcapPort {
    /// Opens `path` (`field` names it in messages) as the rx side of interface `port`: read
    /// once or in a loop, paced to `rate_pps` (0 = unpaced) on a TSC ticking at `tsc_hz`.
    /// `finished` is raised once a non-looping read has been read and forwarded.
    pub fn open(
        port: u16,
        field: String,
        path: &Path,
        looping: bool,
        rate_pps: u64,
        tsc_hz: u64,
        finished: Arc<AtomicBool>,
    ) -> io::Result<Self> {
        Ok(PcapPort {
            port,
            path: path.to_owned(),
            field,
            capture: Capture::open(path)?,
            looping,
            rate: (rate_pps > 0).then(|| Rate::new(rate_pps, tsc_hz)),
            read_this_pass: 0,
            ended: false,
            finished,
        })
    }

    /// The `pcap-input` node: up to one vector of the capture's next frames (as many as the
    /// rate and the free buffers allow); frames it cannot use go to `error-drop`.
    pub fn poll<F: DriversWorker>(&mut self, g: &mut Graph<F>, now: u64) -> Option<VecHandle> {
        if self.ended {
            self.finished.store(true, Ordering::Release);
            return None;
        }
        let want = self.rate.as_mut().map_or(VECTOR_SIZE, |r| r.take(now, VECTOR_SIZE));
        if want == 0 {
            return None;
        }
        let port = self.port;
        let (received, used) = super::receive(g, port, want, |g, i| self.read_into(g, i));
        if let Some(r) = &mut self.rate {
            r.refund(want - used);
        }
        received
    }

    /// Copies the capture's next frame into buffer `i`, or says why it cannot be used;
    /// `None` at the end of the read (after starting it again, for a looping read that
    /// has frames).
    fn read_into<F: DriversWorker>(&mut self, g: &mut Graph<F>, i: u32) -> Option<Result<(), DropReason>> {
        loop {
            let room = &mut g.pool.slot_mut(i)[HEADROOM..];
            let verdict = match self.capture.next_frame(room) {
                Ok(Some(verdict)) => verdict,
                Ok(None) if self.looping && self.read_this_pass > 0 => match self.capture.restart() {
                    Ok(()) => {
                        self.read_this_pass = 0;
                        continue;
                    }
                    Err(e) => return self.end(Some(e)),
                },
                Ok(None) => return self.end(None),
                Err(e) => return self.end(Some(e)),
            };
            self.read_this_pass += 1;
            *g.pool.meta_mut(i) = g.pool.received(*verdict.as_ref().unwrap_or(&0), self.port);
            return Some(verdict.map(drop));
        }
    }

    /// Ends the read, with a warning when a problem ended it.
    fn end(&mut self, problem: Option<String>) -> Option<Result<(), DropReason>> {
        if let Some(e) = problem {
            tracing::warn!(
                "{}: {}: {e} after {} frames; the replay ends here",
                self.field,
                self.path.display(),
                self.read_this_pass
            );
        }
        self.ended = true;
        None
    }
}

/// A capture being written, of either format.
enum CaptureWriter {
    Pcap(PcapWriter<BufWriter<File>>),
    PcapNg(PcapNgWriter<BufWriter<File>>),
}

/// The capture file an interface transmits into, shared by every worker.
pub struct PcapSink {
    /// `None` once finished.
    writer: Mutex<Option<CaptureWriter>>,
}

impl PcapSink {
    /// Creates (or truncates) `path` and writes its header: pcapng when the name ends in
    /// `.pcapng`, else pcap.
    pub fn create(path: &Path) -> io::Result<Self> {
        let file = BufWriter::with_capacity(WRITE_BUFFER, File::create(path)?);
        let to_io = |e: pcap_file::PcapError| io::Error::other(e.to_string());
        let writer = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pcapng")) {
            let mut w = PcapNgWriter::with_endianness(file, Endianness::native()).map_err(to_io)?;
            // pcap-file writes block timestamps in nanoseconds: say so (if_tsresol 9).
            w.write_pcapng_block(InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: 0,
                options: vec![InterfaceDescriptionOption::IfTsResol(9)],
            })
            .map_err(to_io)?;
            CaptureWriter::PcapNg(w)
        } else {
            let header = PcapHeader { endianness: Endianness::native(), ..PcapHeader::default() };
            CaptureWriter::Pcap(PcapWriter::with_header(file, header).map_err(to_io)?)
        };
        Ok(PcapSink { writer: Mutex::new(Some(writer)) })
    }

    /// The writer, also after a worker panicked holding it (a frame is written whole or not).
    fn lock(&self) -> MutexGuard<'_, Option<CaptureWriter>> {
        self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes out what is buffered and closes the file (frames sent after this are
    /// refused).
    pub fn finish(&self) -> io::Result<()> {
        match self.lock().take() {
            Some(CaptureWriter::Pcap(w)) => w.into_writer().flush(),
            Some(CaptureWriter::PcapNg(w)) => w.into_inner().flush(),
            None => Ok(()),
        }
    }
}

impl CaptureWriter {
    /// Appends `frame`, stamped `ts` (since the Unix epoch).
    fn write(&mut self, frame: &[u8], ts: Duration) -> Result<(), pcap_file::PcapError> {
        match self {
            CaptureWriter::Pcap(w) => w.write_packet(&PcapPacket::new(ts, frame.len() as u32, frame)).map(drop),
            CaptureWriter::PcapNg(w) => w
                .write_pcapng_block(EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp: ts,
                    original_len: frame.len() as u32,
                    data: Cow::Borrowed(frame),
                    options: vec![],
                })
                .map(drop),
        }
    }
}

/// A worker's capture files to transmit into, by interface index.
pub struct PcapSinks {
    by_port: Vec<Option<Arc<PcapSink>>>,
}

impl Default for PcapSinks {
    fn default() -> Self {
        PcapSinks { by_port: (0..MAX_INTERFACES).map(|_| None).collect() }
    }
}

impl PcapSinks {
    /// Interface `port` transmits into `sink`.
    pub fn add(&mut self, port: u16, sink: Arc<PcapSink>) {
        if let Some(slot) = self.by_port.get_mut(usize::from(port)) {
            *slot = Some(sink);
        }
    }
}

/// The `pcap-tx` node: writes each run of frames for one port to its capture file (one lock
/// per run; ports without a file write nothing), counts what was written as transmitted and
/// frees it; a frame the file refuses goes to `error-drop` as `write-error`.
#[inline(never)]
pub fn tx<F: DriversWorker>(g: &mut Graph<F>, v: VecHandle) {
    let ts = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let mut refused = [false; VECTOR_SIZE];
    super::for_each_port_run(g, v, |g, port, run| {
        if let Some(Some(sink)) = g.features.ports().pcap_out.by_port.get(usize::from(port)) {
            let mut w = sink.lock();
            for k in run {
                refused[k] = match &mut *w {
                    Some(w) => w.write(g.pool.frame(g.vectors[v].indices()[k]), ts).is_err(),
                    None => true,
                };
            }
        }
    });
    super::complete_tx(g, v, &refused, drops::PCAP_WRITE_ERROR, true);
}
