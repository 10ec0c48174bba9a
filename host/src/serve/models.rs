//! The served models, one per kernel: their tensors (names, datatypes, shapes) and how a request's
//! tensors become a kernel's inputs and its answer becomes tensors again.
//!
//! - `sobel`: `image` UINT8 [H, W] (3 <= H, 3 <= W <= 256) -> `magnitudes` UINT8 [H-2, W-2];
//! - `bloom`: `documents` UINT32 [D, T] (term hashes), optional `profile` UINT32 [1] (0: the loaded
//!   profile) -> `scores` UINT16 [D];
//! - `dense`: `vectors` INT16 [N, 64] -> `activations` INT16 [N, 8].
//!
//! Each has an optional second input, the brownout optional part (`refinement`, `more_documents`,
//! `more_vectors`), answered in a second output (`refinement_magnitudes`, `more_scores`,
//! `more_activations`) when the brownout gate let it run.
//!
//! A repository model's tensors come from its `model.toml` ([`super::repo_model`]); [`Model`] is
//! either, as the server sees it.

use spork_golden::Kernel;
use spork_golden::dense::{MAX_INPUTS, NEURONS};
use spork_golden::sobel::MAX_WIDTH;

use std::sync::Arc;

use super::error::ServeError;
use super::tensor::{DataType, Tensor};
use crate::datapath::work::{Answer, Output, Payload, Work};
use crate::repository::kernel::RepoKernel;

/// One tensor of a model's signature as metadata shows it; -1 is a variable dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Name.
    pub name: String,
    /// Element type.
    pub datatype: DataType,
    /// Shape.
    pub shape: Vec<i64>,
}

/// A served model: a built-in kernel's, or a repository model's.
#[derive(Clone, Debug)]
pub enum Model {
    /// One of Spork's own kernels.
    Builtin(Builtin),
    /// A model of a repository.
    Repo(Arc<RepoKernel>),
}

impl Model {
    /// The model serving built-in `kernel`.
    pub fn of(kernel: Kernel) -> Model {
        Model::Builtin(Builtin::of(kernel))
    }

    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            Model::Builtin(b) => b.name(),
            Model::Repo(r) => r.name(),
        }
    }

    /// Its inputs and outputs as metadata shows them.
    pub fn signature(&self) -> (Vec<Signature>, Vec<Signature>) {
        match self {
            Model::Builtin(b) => {
                let sig = |ts: &[TensorSpec]| {
                    ts.iter()
                        .map(|t| Signature {
                            name: t.name.into(),
                            datatype: t.datatype,
                            shape: t.shape.to_vec(),
                        })
                        .collect()
                };
                (sig(b.inputs), sig(b.outputs))
            }
            Model::Repo(r) => super::repo_model::signature(r),
        }
    }

    /// A request's tensors as the kernel's inputs, every name, datatype and shape checked.
    pub fn decode(&self, tensors: &[Tensor]) -> Result<Work, ServeError> {
        match self {
            Model::Builtin(b) => b.decode(tensors),
            Model::Repo(r) => super::repo_model::decode(r, tensors),
        }
    }

    /// The answer's tensors: the mandatory outputs, and the optional part's if it ran.
    pub fn encode(&self, answer: &Answer, work: &Work) -> Vec<Tensor> {
        match self {
            Model::Builtin(b) => b.encode(answer, work),
            Model::Repo(r) => super::repo_model::encode(r, answer),
        }
    }

    /// Which outputs a client asks for by name (each once); an unknown name is refused.
    pub fn outputs_named<'n>(
        &self,
        names: impl IntoIterator<Item = &'n str>,
    ) -> Result<Vec<String>, ServeError> {
        match self {
            Model::Builtin(b) => b.outputs_named(names),
            Model::Repo(r) => {
                let (_, outputs) = super::repo_model::signature(r);
                let known: Vec<&str> = outputs.iter().map(|s| s.name.as_str()).collect();
                chosen_outputs(r.name(), &known, names)
            }
        }
    }

    /// Bytes `tensors` take once decoded and answered, from their shapes alone.
    pub fn decoded_bytes(&self, tensors: &[Tensor]) -> usize {
        match self {
            Model::Builtin(b) => b.decoded_bytes(tensors),
            Model::Repo(r) => super::repo_model::decoded_bytes(r, tensors),
        }
    }
}

/// One tensor of a model's signature; -1 is a variable dimension.
#[derive(Clone, Copy, Debug)]
pub struct TensorSpec {
    /// Name.
    pub name: &'static str,
    /// Element type.
    pub datatype: DataType,
    /// Shape.
    pub shape: &'static [i64],
}

/// A built-in kernel's model: its tensors and their conversion, fixed in code.
#[derive(Clone, Copy, Debug)]
pub struct Builtin {
    /// The kernel it runs.
    pub kernel: Kernel,
    /// Required input, optional inputs (the last is the brownout optional part).
    pub inputs: &'static [TensorSpec],
    /// Output, then the optional part's output.
    pub outputs: &'static [TensorSpec],
}

/// The version every model serves.
pub const VERSION: &str = "1";

const fn spec(name: &'static str, datatype: DataType, shape: &'static [i64]) -> TensorSpec {
    TensorSpec { name, datatype, shape }
}

const SOBEL: Builtin = Builtin {
    kernel: Kernel::Sobel,
    inputs: &[spec("image", DataType::Uint8, &[-1, -1]), spec("refinement", DataType::Uint8, &[-1, -1])],
    outputs: &[
        spec("magnitudes", DataType::Uint8, &[-1, -1]),
        spec("refinement_magnitudes", DataType::Uint8, &[-1, -1]),
    ],
};
const BLOOM: Builtin = Builtin {
    kernel: Kernel::Bloom,
    inputs: &[
        spec("documents", DataType::Uint32, &[-1, -1]),
        spec("profile", DataType::Uint32, &[1]),
        spec("more_documents", DataType::Uint32, &[-1, -1]),
    ],
    outputs: &[spec("scores", DataType::Uint16, &[-1]), spec("more_scores", DataType::Uint16, &[-1])],
};
const DENSE: Builtin = Builtin {
    kernel: Kernel::Dense,
    inputs: &[spec("vectors", DataType::Int16, &[-1, 64]), spec("more_vectors", DataType::Int16, &[-1, 64])],
    outputs: &[
        spec("activations", DataType::Int16, &[-1, NEURONS as i64]),
        spec("more_activations", DataType::Int16, &[-1, NEURONS as i64]),
    ],
};

impl Builtin {
    /// The model serving `kernel`.
    pub fn of(kernel: Kernel) -> Builtin {
        match kernel {
            Kernel::Sobel => SOBEL,
            Kernel::Bloom => BLOOM,
            Kernel::Dense => DENSE,
        }
    }

    /// Its name: the kernel's.
    pub fn name(&self) -> &'static str {
        self.kernel.name()
    }

    /// A request's tensors as the kernel's inputs, every name, datatype and shape checked.
    pub fn decode(&self, tensors: &[Tensor]) -> Result<Work, ServeError> {
        if let Some(t) = tensors.iter().find(|t| !self.inputs.iter().any(|s| s.name == t.name)) {
            return Err(self.bad(format!("has no input '{}'", cut(&t.name))));
        }
        let find = |i: usize| self.input(tensors, self.inputs[i]);
        let parts = self.inputs.len();
        let mandatory = self
            .payload(find(0)?.ok_or_else(|| self.bad(format!("needs input '{}'", self.inputs[0].name)))?)?;
        if self.kernel == Kernel::Bloom
            && let Some(p) = find(1)?
            && p.data.iter().any(|&b| b != 0)
        {
            return Err(self.bad("serves profile 0 only (the profile loaded on its boards)".into()));
        }
        let optional = find(parts - 1)?.map(|t| self.payload(t)).transpose()?;
        Ok(Work { mandatory, optional })
    }

    /// The answer's tensors: the mandatory output, and the optional part's if it ran.
    pub fn encode(&self, answer: &Answer, work: &Work) -> Vec<Tensor> {
        let mut out = vec![self.output(self.outputs[0].name, &answer.mandatory, &work.mandatory)];
        if let (Some(o), Some(p)) = (&answer.optional, &work.optional) {
            out.push(self.output(self.outputs[1].name, o, p));
        }
        out
    }

    /// Which of the model's outputs a client asks for by name (each once, whatever it repeats): an
    /// unknown name is refused before any work is done.
    pub fn outputs_named<'n>(
        &self,
        names: impl IntoIterator<Item = &'n str>,
    ) -> Result<Vec<String>, ServeError> {
        let known: Vec<&str> = self.outputs.iter().map(|s| s.name).collect();
        chosen_outputs(self.name(), &known, names)
    }

    /// Bytes `tensors` take once decoded, from their shapes alone (so a request too large to hold
    /// is refused before it is built): their elements, and for documents and vectors each row's own
    /// allocation (a Vec's header and the allocator's overhead), so a request of millions of
    /// one-term documents is charged what it would really hold.
    pub fn decoded_bytes(&self, tensors: &[Tensor]) -> usize {
        const ROW: u64 = 24 + 16;
        let bytes = |t: &Tensor| -> u64 {
            match (self.kernel, t.shape.as_slice()) {
                (Kernel::Bloom | Kernel::Dense, &[rows, _]) => {
                    rows.saturating_mul(ROW).saturating_add(t.data.len() as u64)
                }
                _ => t.data.len() as u64,
            }
        };
        let total = tensors.iter().map(bytes).fold(0u64, u64::saturating_add);
        usize::try_from(total).unwrap_or(usize::MAX)
    }

    fn input<'t>(&self, tensors: &'t [Tensor], spec: TensorSpec) -> Result<Option<&'t Tensor>, ServeError> {
        let mut named = tensors.iter().filter(|t| t.name == spec.name);
        let (Some(t), None) = (named.next(), named.next()) else {
            return match tensors.iter().filter(|t| t.name == spec.name).count() {
                0 => Ok(None),
                _ => Err(self.bad(format!("input '{}' is given twice", spec.name))),
            };
        };
        if t.datatype != spec.datatype {
            return Err(self.bad(format!(
                "input '{}' must be {}, not {}",
                spec.name,
                spec.datatype.name(),
                t.datatype.name()
            )));
        }
        let fits = t.shape.len() == spec.shape.len()
            && t.shape.iter().zip(spec.shape).all(|(&d, &s)| s < 0 || d as i64 == s);
        if !fits {
            return Err(self
                .bad(format!("input '{}' must have shape {:?}, not {:?}", spec.name, spec.shape, t.shape)));
        }
        Ok(Some(t))
    }

    /// A checked input tensor as a kernel payload.
    fn payload(&self, t: &Tensor) -> Result<Payload, ServeError> {
        let (rows, cols) = (t.shape[0] as usize, t.shape[1] as usize);
        match self.kernel {
            Kernel::Sobel => {
                if rows < 3 || !(3..=MAX_WIDTH).contains(&cols) {
                    return Err(self.bad(format!(
                        "input '{}' must be at least 3 x 3 and at most {MAX_WIDTH} wide, not {rows} x {cols}",
                        t.name
                    )));
                }
                Ok(Payload::Image { pixels: t.data.clone(), width: cols })
            }
            Kernel::Bloom => {
                if rows == 0 || cols == 0 {
                    return Err(self.bad(format!("input '{}' has no terms", t.name)));
                }
                let terms: Vec<u32> =
                    t.data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                Ok(Payload::Documents(terms.chunks(cols).map(<[u32]>::to_vec).collect()))
            }
            Kernel::Dense => {
                if rows == 0 || cols != MAX_INPUTS {
                    return Err(
                        self.bad(format!("input '{}' needs at least one vector of {MAX_INPUTS}", t.name))
                    );
                }
                let xs: Vec<i16> = t.data.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
                Ok(Payload::Vectors(xs.chunks(cols).map(<[i16]>::to_vec).collect()))
            }
        }
    }

    fn output(&self, name: &str, out: &Output, input: &Payload) -> Tensor {
        let (shape, data): (Vec<u64>, Vec<u8>) = match (out, input) {
            (Output::Magnitudes(m), Payload::Image { pixels, width }) => {
                let h = (pixels.len() / width) as u64;
                (vec![h - 2, *width as u64 - 2], m.clone())
            }
            (Output::Scores(s), _) => {
                (vec![s.len() as u64], s.iter().flat_map(|v| v.to_le_bytes()).collect())
            }
            (Output::Activations(a), _) => (
                vec![a.len() as u64, NEURONS as u64],
                a.iter().flatten().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            (Output::Magnitudes(m), _) => (vec![m.len() as u64], m.clone()),
            (Output::Tensors(ts), _) => {
                ts.first().map_or((vec![0], vec![]), |t| (t.shape.clone(), t.bytes().to_vec()))
            }
        };
        let spec = self.outputs.iter().find(|s| s.name == name).copied().unwrap_or(self.outputs[0]);
        Tensor { name: name.to_string(), datatype: spec.datatype, shape, data }
    }

    fn bad(&self, what: String) -> ServeError {
        ServeError::BadRequest(format!("model '{}' {what}", self.name()))
    }
}

/// Which of `known` outputs a client asks for by name, each once in the order first named; an
/// unknown name is refused before any work is done.
pub fn chosen_outputs<'n>(
    model: &str,
    known: &[&str],
    names: impl IntoIterator<Item = &'n str>,
) -> Result<Vec<String>, ServeError> {
    let mut chosen: Vec<String> = Vec::new();
    for name in names {
        if !known.contains(&name) {
            return Err(ServeError::BadRequest(format!("model '{model}' has no output '{}'", cut(name))));
        }
        if !chosen.iter().any(|c| c == name) {
            chosen.push(name.to_string());
        }
    }
    Ok(chosen)
}

/// A client's name, cut to 80 characters for an error message.
pub fn cut(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::work::KernelImage;

    fn image(h: usize, w: usize) -> Tensor {
        let data: Vec<u8> = (0..h * w).map(|i| (i * 7 % 251) as u8).collect();
        Tensor::new("image", "UINT8", &[h as i64, w as i64], data).unwrap()
    }

    #[test]
    fn a_sobel_request_round_trips_through_the_reference() {
        let m = Builtin::of(Kernel::Sobel);
        let work = m.decode(&[image(5, 7)]).unwrap();
        let k = KernelImage::new(Kernel::Sobel, 1);
        let answer = k.answer(&work, false).unwrap();
        let out = m.encode(&answer, &work);
        assert_eq!((out.len(), out[0].name.as_str(), out[0].shape.clone()), (1, "magnitudes", vec![3, 5]));
        assert_eq!(out[0].data.len(), 15);
    }

    #[test]
    fn wrong_names_types_and_shapes_are_named() {
        let m = Builtin::of(Kernel::Dense);
        let wrong_type = Tensor::new("vectors", "UINT8", &[1, 64], vec![0; 64]).unwrap();
        assert!(m.decode(&[wrong_type]).unwrap_err().to_string().contains("must be INT16"));
        let wrong_shape = Tensor::new("vectors", "INT16", &[2, 63], vec![0; 252]).unwrap();
        assert!(m.decode(&[wrong_shape]).unwrap_err().to_string().contains("shape"));
        let unknown = Tensor::new("pixels", "INT16", &[1, 64], vec![0; 128]).unwrap();
        assert!(m.decode(&[unknown]).unwrap_err().to_string().contains("no input 'pixels'"));
        assert!(m.decode(&[]).unwrap_err().to_string().contains("needs input 'vectors'"));
        let wide = Tensor::new("image", "UINT8", &[3, 300], vec![0; 900]).unwrap();
        assert!(Builtin::of(Kernel::Sobel).decode(&[wide]).unwrap_err().to_string().contains("256"));
    }

    #[test]
    fn requested_outputs_are_known_names_each_once() {
        let m = Builtin::of(Kernel::Sobel);
        let many = std::iter::repeat_n("magnitudes", 20_000);
        assert_eq!(m.outputs_named(many).unwrap(), vec!["magnitudes"]);
        let both = m.outputs_named(["refinement_magnitudes", "magnitudes", "refinement_magnitudes"]).unwrap();
        assert_eq!(both, vec!["refinement_magnitudes", "magnitudes"]);
        assert!(
            m.outputs_named(["magnitudes", "nope"]).unwrap_err().to_string().contains("no output 'nope'")
        );
    }

    #[test]
    fn decoded_bytes_charge_each_row() {
        let docs = Tensor::new("documents", "UINT32", &[1000, 1], vec![0; 4000]).unwrap();
        assert_eq!(Builtin::of(Kernel::Bloom).decoded_bytes(&[docs]), 1000 * (40 + 4));
        assert_eq!(Builtin::of(Kernel::Sobel).decoded_bytes(&[image(4, 5)]), 20);
    }

    #[test]
    fn bloom_serves_the_loaded_profile_only() {
        let m = Builtin::of(Kernel::Bloom);
        let docs = Tensor::from_values("documents", "UINT32", &[2, 2], &[1, 2, 3, 4]).unwrap();
        let p1 = Tensor::from_values("profile", "UINT32", &[1], &[1]).unwrap();
        assert!(m.decode(&[docs.clone(), p1]).unwrap_err().to_string().contains("profile 0"));
        let p0 = Tensor::from_values("profile", "UINT32", &[1], &[0]).unwrap();
        assert!(matches!(m.decode(&[docs, p0]).unwrap().mandatory, Payload::Documents(d) if d.len() == 2));
    }
}
