//! The messages between the server and a kernel process, little-endian, every length checked
//! against the message (the server does not trust what a kernel process sends, and a kernel process
//! bounds what it reads too). `Init` and its reply travel as length-prefixed frames on the socket;
//! calls and answers through the window's header ([`super::doorbell`]).

use std::io::{Read, Write};

/// The largest frame the server reads from a kernel process: a reply is a status and a message.
pub const REPLY_MAX: usize = 16 * 1024;

/// The largest frame a kernel process reads from the server: names and shapes.
pub const REQUEST_MAX: usize = 16 * 1024 * 1024;

/// The shared memory a tensor lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// The kernel process's own window, past its header (a tensor copied in or out for the call).
    Window = 0,
    /// The model's inputs arena (read-only in a kernel process): a request decoded in place.
    Inputs = 1,
    /// The model's outputs arena: the kernel writes the answer in place.
    Outputs = 2,
}

/// Where one tensor lies in shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desc {
    /// Its ABI type code.
    pub dtype: u32,
    /// Its dimensions.
    pub shape: Vec<u64>,
    /// The memory it lies in.
    pub region: Region,
    /// Its first byte's offset in that memory.
    pub offset: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// From the server to a kernel process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToKernel {
    /// The first message: the library's configuration string and the tensors' names.
    Init {
        /// `spork_kernel_init`'s argument.
        config: String,
        /// Input names, in model.toml's order.
        inputs: Vec<String>,
        /// Output names, in model.toml's order.
        outputs: Vec<String>,
    },
    /// One request: its tensors in the window.
    Run {
        /// Inputs, in order.
        inputs: Vec<Desc>,
        /// Outputs, in order.
        outputs: Vec<Desc>,
    },
}

/// From a kernel process to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FromKernel {
    /// The library opened and one kernel state made.
    Ready,
    /// The library could not be opened or initialised (the reason).
    Refused(String),
    /// A call's result: the kernel's own message on failure.
    Done(Result<(), String>),
}

/// A frame that does not decode.
#[derive(Debug, thiserror::Error)]
#[error("malformed frame: {0}")]
pub struct Malformed(pub &'static str);

struct Out(Vec<u8>);

impl Out {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn text(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn descs(&mut self, ds: &[Desc]) {
        self.u32(ds.len() as u32);
        for d in ds {
            self.u32(d.dtype);
            self.u32(d.shape.len() as u32);
            d.shape.iter().for_each(|&x| self.u64(x));
            self.u32(d.region as u32);
            self.u64(d.offset);
            self.u64(d.bytes);
        }
    }
}

struct In<'a>(&'a [u8]);

impl In<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| Malformed("u32"))?))
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| Malformed("u64"))?))
    }
    /// A count of items each at least `min` bytes long, checked against what is left.
    fn count(&mut self, min: usize) -> Result<usize, Malformed> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min) > self.0.len() {
            return Err(Malformed("a count past the frame"));
        }
        Ok(n)
    }
    fn text(&mut self) -> Result<String, Malformed> {
        let n = self.count(1)?;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    fn texts(&mut self) -> Result<Vec<String>, Malformed> {
        let n = self.count(4)?;
        (0..n).map(|_| self.text()).collect()
    }
    fn descs(&mut self) -> Result<Vec<Desc>, Malformed> {
        let n = self.count(28)?;
        (0..n)
            .map(|_| {
                let dtype = self.u32()?;
                let rank = self.count(8)?;
                let shape = (0..rank).map(|_| self.u64()).collect::<Result<_, _>>()?;
                let region = match self.u32()? {
                    0 => Region::Window,
                    1 => Region::Inputs,
                    2 => Region::Outputs,
                    _ => return Err(Malformed("region")),
                };
                Ok(Desc { dtype, shape, region, offset: self.u64()?, bytes: self.u64()? })
            })
            .collect()
    }
}

impl ToKernel {
    /// Its frame's payload, into `buf` (cleared first; reused between calls).
    pub fn encode(&self, buf: &mut Vec<u8>) {
        buf.clear();
        let mut o = Out(std::mem::take(buf));
        match self {
            ToKernel::Init { config, inputs, outputs } => {
                o.0.push(1);
                o.text(config);
                for names in [inputs, outputs] {
                    o.u32(names.len() as u32);
                    names.iter().for_each(|n| o.text(n));
                }
            }
            ToKernel::Run { inputs, outputs } => {
                *buf = o.0;
                return encode_run(inputs, outputs, buf);
            }
        }
        *buf = o.0;
    }

    /// From a frame's payload.
    pub fn decode(bytes: &[u8]) -> Result<ToKernel, Malformed> {
        let mut i = In(bytes);
        match i.u8()? {
            1 => Ok(ToKernel::Init { config: i.text()?, inputs: i.texts()?, outputs: i.texts()? }),
            2 => Ok(ToKernel::Run { inputs: i.descs()?, outputs: i.descs()? }),
            _ => Err(Malformed("unknown message")),
        }
    }
}

impl FromKernel {
    /// Its frame's payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Out(Vec::new());
        match self {
            FromKernel::Ready => o.0.push(1),
            FromKernel::Refused(m) => {
                o.0.push(2);
                o.text(&clip(m));
            }
            FromKernel::Done(Ok(())) => o.0.push(3),
            FromKernel::Done(Err(m)) => {
                o.0.push(4);
                o.text(&clip(m));
            }
        }
        o.0
    }

    /// From a frame's payload.
    pub fn decode(bytes: &[u8]) -> Result<FromKernel, Malformed> {
        let mut i = In(bytes);
        match i.u8()? {
            1 => Ok(FromKernel::Ready),
            2 => Ok(FromKernel::Refused(i.text()?)),
            3 => Ok(FromKernel::Done(Ok(()))),
            4 => Ok(FromKernel::Done(Err(i.text()?))),
            _ => Err(Malformed("unknown message")),
        }
    }
}

/// A `Run` message's payload into `buf` (cleared first), from borrowed descriptors.
pub fn encode_run(inputs: &[Desc], outputs: &[Desc], buf: &mut Vec<u8>) {
    buf.clear();
    let mut o = Out(std::mem::take(buf));
    o.0.push(2);
    o.descs(inputs);
    o.descs(outputs);
    *buf = o.0;
}

/// A message cut to fit a reply frame.
fn clip(m: &str) -> String {
    let mut end = m.len().min(REPLY_MAX - 64);
    while !m.is_char_boundary(end) {
        end -= 1;
    }
    m[..end].to_string()
}

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| std::io::Error::other("frame too large"))?;
    let mut frame = Vec::with_capacity(4 + payload.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(payload);
    w.write_all(&frame)
}

/// Reads one frame of at most `max` bytes into `buf`; `Ok(false)` at a clean end of stream.
pub fn read_frame(r: &mut impl Read, max: usize, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes, past the bound of {max}"),
        ));
    }
    buf.resize(len, 0);
    r.read_exact(buf)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_decodes_to_itself() {
        let d = Desc { dtype: 1, shape: vec![3, 4], region: Region::Outputs, offset: 64, bytes: 12 };
        let to = [
            ToKernel::Init {
                config: "k=1".into(),
                inputs: vec!["a".into(), "b".into()],
                outputs: vec!["c".into()],
            },
            ToKernel::Run { inputs: vec![d.clone(), d.clone()], outputs: vec![d] },
        ];
        let mut buf = Vec::new();
        for m in to {
            m.encode(&mut buf);
            assert_eq!(ToKernel::decode(&buf).unwrap(), m);
        }
        for m in [
            FromKernel::Ready,
            FromKernel::Refused("no".into()),
            FromKernel::Done(Ok(())),
            FromKernel::Done(Err("bad".into())),
        ] {
            assert_eq!(FromKernel::decode(&m.encode()).unwrap(), m);
        }
    }

    #[test]
    fn a_count_past_the_frame_is_refused_before_any_allocation() {
        // A Run claiming 2^32-1 inputs in a 5-byte frame.
        let bytes = [2u8, 0xff, 0xff, 0xff, 0xff];
        assert!(ToKernel::decode(&bytes).is_err());
        assert!(FromKernel::decode(&[4, 0xff, 0xff, 0xff, 0x7f]).is_err());
        assert!(FromKernel::decode(&[9]).is_err());
    }

    #[test]
    fn a_frame_past_its_bound_is_refused_and_a_long_message_is_clipped() {
        let mut wire = Vec::new();
        write_frame(&mut wire, &[0u8; 100]).unwrap();
        let mut buf = Vec::new();
        assert!(read_frame(&mut wire.as_slice(), 99, &mut buf).is_err());
        assert!(read_frame(&mut wire.as_slice(), 100, &mut buf).unwrap());
        let long = FromKernel::Done(Err("é".repeat(REPLY_MAX))).encode();
        assert!(long.len() <= REPLY_MAX);
        assert!(!read_frame(&mut [].as_slice(), 10, &mut buf).unwrap(), "a clean end");
    }
}
