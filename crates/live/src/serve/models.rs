//! The served models: each a model of a repository (Spork's own, `models/`, by default), its
//! tensors from its `model.toml`; how a request's tensors become the kernel's inputs and its answer
//! tensors again is [`super::repo_model`].

use std::sync::Arc;

use super::error::ServeError;
use super::repo_model::Bound;
use super::tensor::{DataType, Tensor};
use crate::datapath::work::{Answer, Work};
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

/// A served model.
#[derive(Clone, Debug)]
pub struct Model(pub Arc<RepoKernel>);

/// The version every model serves.
pub const VERSION: &str = "1";

impl Model {
    /// Its name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// A request for it has arrived: its kernel process, if it sleeps, is woken now, so that it is
    /// polling when the request reaches it.
    pub fn expect(&self) {
        if let Some(iso) = self.0.isolated() {
            iso.wake();
        }
    }

    /// Why it takes no requests, once its kernel processes kept dying.
    pub fn unavailable(&self) -> Option<String> {
        self.0.isolated().and_then(|iso| iso.unavailable())
    }

    /// Its inputs and outputs as metadata shows them.
    pub fn signature(&self) -> (Vec<Signature>, Vec<Signature>) {
        super::repo_model::signature(&self.0)
    }

    /// A request's tensors checked (names, datatypes) and their dimensions bound, once.
    pub fn bind(&self, tensors: &[Tensor]) -> Result<Bound, ServeError> {
        super::repo_model::bind(&self.0, tensors)
    }

    /// A request's tensors as the kernel's inputs, at the dimensions `bound` from them.
    pub fn decode(&self, tensors: &[Tensor], bound: &Bound) -> Result<Work, ServeError> {
        super::repo_model::decode(&self.0, tensors, bound)
    }

    /// The answer's tensors: the mandatory outputs, and the optional part's if it ran (taken out of
    /// `answer`, not copied).
    pub fn encode(&self, answer: &mut Answer, _work: &Work) -> Vec<Tensor> {
        super::repo_model::encode(&self.0, answer)
    }

    /// Which outputs a client asks for by name (each once); an unknown name is refused.
    pub fn outputs_named<'n>(
        &self,
        names: impl IntoIterator<Item = &'n str>,
    ) -> Result<Vec<String>, ServeError> {
        let (_, outputs) = self.signature();
        let known: Vec<&str> = outputs.iter().map(|s| s.name.as_str()).collect();
        chosen_outputs(self.name(), &known, names)
    }

    /// The outputs a request is answered with (name, datatype, elements), from its bound dimensions
    /// (none if they did not bind: the decode refuses the request).
    pub fn answer_shapes(&self, bound: Option<&Bound>) -> Vec<(String, DataType, u64)> {
        bound.map(|b| super::repo_model::answer_shapes(&self.0, b)).unwrap_or_default()
    }

    /// Bytes the outputs of a request take, from its bound dimensions.
    pub fn answer_bytes(&self, bound: Option<&Bound>) -> usize {
        let bytes = bound.map_or(0, |b| super::repo_model::answer_bytes(&self.0, b));
        usize::try_from(bytes).unwrap_or(usize::MAX)
    }

    /// Bytes `tensors` take once decoded and answered.
    pub fn decoded_bytes(&self, tensors: &[Tensor], bound: Option<&Bound>) -> usize {
        super::repo_model::decoded_bytes(&self.0, tensors, bound)
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
