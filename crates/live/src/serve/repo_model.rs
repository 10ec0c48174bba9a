//! A repository model's tensors on the wire: its signature from `model.toml` (variable dimensions
//! shown as -1), a request's tensors checked by name and datatype and bound by the spec (bounds,
//! agreement between inputs), and the kernel's output tensors named back.

use std::sync::Arc;

use super::error::ServeError;
use super::models::{Signature, cut};
use super::tensor::{DataType, Tensor};
use crate::datapath::work::{Answer, Output, Payload, Work};
use crate::repository::kernel::RepoKernel;
use crate::repository::shape::{self, DimExpr};
use crate::repository::spec::TensorSpec;

/// The model's inputs and outputs, the optional part's after the mandatory ones.
pub fn signature(k: &RepoKernel) -> (Vec<Signature>, Vec<Signature>) {
    let sig = |t: &TensorSpec, name: &str| Signature {
        name: name.into(),
        datatype: t.dtype,
        shape: t.shape.iter().map(|e| if let DimExpr::Fixed(n) = e { *n as i64 } else { -1 }).collect(),
    };
    let side = |ts: &[TensorSpec], optional: Option<&Vec<String>>| {
        let mut v: Vec<Signature> = ts.iter().map(|t| sig(t, &t.name)).collect();
        if let Some(names) = optional {
            v.extend(ts.iter().zip(names).map(|(t, n)| sig(t, n)));
        }
        v
    };
    let o = k.spec.optional.as_ref();
    (side(&k.spec.inputs, o.map(|o| &o.0)), side(&k.spec.outputs, o.map(|o| &o.1)))
}

fn bad(k: &RepoKernel, what: String) -> ServeError {
    ServeError::BadRequest(format!("model '{}' {what}", k.name()))
}

/// The tensors named `names`, in that order; `None` if none of them is given, an error if only
/// some are.
fn part<'t>(
    k: &RepoKernel,
    tensors: &'t [Tensor],
    names: &[&str],
) -> Result<Option<Vec<&'t Tensor>>, ServeError> {
    let found: Vec<Option<&Tensor>> = names.iter().map(|n| tensors.iter().find(|t| t.name == *n)).collect();
    if found.iter().all(Option::is_none) {
        return Ok(None);
    }
    let missing: Vec<&str> = names.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(n, _)| *n).collect();
    if !missing.is_empty() {
        return Err(bad(k, format!("needs input '{}' beside the others given", missing.join("', '"))));
    }
    Ok(Some(found.into_iter().flatten().collect()))
}

/// A request's tensors checked against the model's inputs (names, datatypes) and each part's
/// dimensions bound from their shapes, once: what the request's reservations, its decode and its
/// answer's sizes all read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// The mandatory part's dimensions.
    mandatory: Vec<u64>,
    /// The optional part's, if its inputs are given.
    optional: Option<Vec<u64>>,
}

/// Binds a request's tensors (see [`Bound`]).
pub fn bind(k: &RepoKernel, tensors: &[Tensor]) -> Result<Bound, ServeError> {
    let (inputs, _) = signature(k);
    for (i, t) in tensors.iter().enumerate() {
        if !inputs.iter().any(|s| s.name == t.name) {
            return Err(bad(k, format!("has no input '{}'", cut(&t.name))));
        }
        if tensors[..i].iter().any(|u| u.name == t.name) {
            return Err(bad(k, format!("input '{}' is given twice", cut(&t.name))));
        }
    }
    let mandatory: Vec<&str> = k.spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let given = part(k, tensors, &mandatory)?;
    let given = given.ok_or_else(|| bad(k, format!("needs input '{}'", mandatory.join("', '"))))?;
    let optional = match &k.spec.optional {
        Some((names, _)) => {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            part(k, tensors, &names)?.map(|p| part_dims(k, &p)).transpose()?
        }
        None => None,
    };
    Ok(Bound { mandatory: part_dims(k, &given)?, optional })
}

/// One part's dimensions, from its tensors (in the spec's input order): datatypes checked, shapes
/// bound within the spec's bounds.
fn part_dims(k: &RepoKernel, given: &[&Tensor]) -> Result<Vec<u64>, ServeError> {
    for (t, spec) in given.iter().zip(&k.spec.inputs) {
        if t.datatype != spec.dtype {
            let (want, got) = (spec.dtype.name(), t.datatype.name());
            return Err(bad(k, format!("input '{}' must be {want}, not {got}", t.name)));
        }
    }
    let specs: Vec<(&str, &[DimExpr])> =
        given.iter().zip(&k.spec.inputs).map(|(t, s)| (t.name.as_str(), &s.shape[..])).collect();
    let shapes: Vec<&[u64]> = given.iter().map(|t| &t.shape[..]).collect();
    shape::bind(&k.spec.dims, &specs, &shapes).map_err(|why| bad(k, why))
}

/// A request's tensors as the kernel's payload (and its optional part's), at the dimensions
/// `bound` from them.
pub fn decode(k: &Arc<RepoKernel>, tensors: &[Tensor], bound: &Bound) -> Result<Work, ServeError> {
    let mandatory: Vec<&str> = k.spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let given = part(k, tensors, &mandatory)?.unwrap_or_default();
    let mandatory = payload(k, &given, &bound.mandatory)?;
    let optional = match (&k.spec.optional, &bound.optional) {
        (Some((names, _)), Some(dims)) => {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let given = part(k, tensors, &names)?.unwrap_or_default();
            Some(payload(k, &given, dims)?)
        }
        _ => None,
    };
    Ok(Work { mandatory, optional })
}

fn payload(k: &RepoKernel, given: &[&Tensor], dims: &[u64]) -> Result<Payload, ServeError> {
    let mut bufs = Vec::with_capacity(given.len());
    for t in given {
        let buf = k
            .input(t.datatype, &t.shape, &t.data)
            .ok_or_else(|| bad(k, format!("input '{}' does not fit in memory", t.name)))?;
        bufs.push(buf);
    }
    Ok(Payload::Tensors(k.payload_at(bufs, dims.to_vec())))
}

/// The answer's tensors, named as the model names them: the kernel's buffers themselves, taken out
/// of `answer` (left without tensors), not copied.
pub fn encode(k: &RepoKernel, answer: &mut Answer) -> Vec<Tensor> {
    let named = |out: &mut Output, names: Vec<&str>| -> Vec<Tensor> {
        let Output::Tensors(ts) = out;
        std::mem::take(ts)
            .into_iter()
            .zip(names)
            .map(|(t, name)| Tensor {
                name: name.into(),
                datatype: t.dtype,
                shape: t.shape.clone(),
                data: bytes::Bytes::from_owner(t),
            })
            .collect()
    };
    let mut out = named(&mut answer.mandatory, k.spec.outputs.iter().map(|t| t.name.as_str()).collect());
    if let (Some(o), Some((_, names))) = (&mut answer.optional, &k.spec.optional) {
        out.extend(named(o, names.iter().map(String::as_str).collect()));
    }
    out
}

/// The outputs a request is answered with, from its bound dimensions: each output's name, datatype
/// and elements, the optional part's too (sized by its own inputs' shapes, which may differ from the
/// mandatory part's) if its inputs are given.
pub fn answer_shapes(k: &RepoKernel, bound: &Bound) -> Vec<(String, DataType, u64)> {
    let part = |dims: &[u64], names: Vec<&str>| -> Vec<(String, DataType, u64)> {
        k.spec
            .output_shapes(dims)
            .iter()
            .zip(names)
            .map(|((dt, shape), name)| {
                (name.to_string(), *dt, shape.iter().fold(1u64, |a, &d| a.saturating_mul(d)))
            })
            .collect()
    };
    let mut out = part(&bound.mandatory, k.spec.outputs.iter().map(|s| s.name.as_str()).collect());
    if let (Some(dims), Some((_, names))) = (&bound.optional, &k.spec.optional) {
        out.extend(part(dims, names.iter().map(String::as_str).collect()));
    }
    out
}

/// Bytes the outputs of a request take, from its bound dimensions.
pub fn answer_bytes(k: &RepoKernel, bound: &Bound) -> u64 {
    answer_shapes(k, bound)
        .iter()
        .map(|(_, dt, n)| n.saturating_mul(dt.size() as u64))
        .fold(0, u64::saturating_add)
}

/// Bytes a request takes decoded: its inputs and its outputs (the kernel's buffers, which the
/// answer's tensors share); its inputs alone if they do not bind (the decode refuses them). Each
/// protocol reserves its own encoding of the answer beside them.
pub fn decoded_bytes(k: &RepoKernel, tensors: &[Tensor], bound: Option<&Bound>) -> usize {
    let inputs: u64 = tensors.iter().map(|t| t.data.len() as u64).sum();
    let outputs = bound.map_or(0, |b| answer_bytes(k, b));
    usize::try_from(inputs.saturating_add(outputs)).unwrap_or(usize::MAX)
}
