//! Requests for a model the load generator knows only from the server: its inputs' names, datatypes
//! and shapes from the model's metadata (its optional inputs, as its configuration marks them, left
//! out), each variable dimension sized so that a request holds the items its size asks for (or the
//! shape given with `--shape NAME:DIMS`), and data random within the datatype, zero, or taken from a
//! JSON file in perf_analyzer's form (`{"data": [{"NAME": [values] or {"content": [values],
//! "shape": [dims]}}, ...]}`, one entry per request, in turn).

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, RngExt, SeedableRng};

use super::body::WireTensor;

/// What the user gave about the inputs.
#[derive(Clone, Debug, Default)]
pub struct Given {
    /// Shapes given by input name (`--shape`).
    pub shapes: BTreeMap<String, Vec<u64>>,
    /// Where the data comes from.
    pub data: Data,
}

/// A request's data.
#[derive(Clone, Debug, Default)]
pub enum Data {
    /// Uniform within the datatype (floats in [-1, 1)).
    #[default]
    Random,
    /// All zero.
    Zero,
    /// From a file: one entry per request, in turn; each input's values and, optionally, shape.
    File(Vec<BTreeMap<String, FileTensor>>),
}

/// One input of a data file's entry.
#[derive(Clone, Debug, PartialEq)]
pub struct FileTensor {
    /// Its values, row-major.
    pub content: Vec<f64>,
    /// Its shape, if the file gives it.
    pub shape: Option<Vec<u64>>,
}

/// One input as the server describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// Its name.
    pub name: String,
    /// Its datatype (the protocol's name).
    pub datatype: &'static str,
    /// Its shape, -1 where variable.
    pub dims: Vec<i64>,
}

/// A model's inputs as the server describes them, with what the user gave.
#[derive(Clone, Debug)]
pub struct Described {
    /// The inputs a request carries (its optional ones left out).
    pub inputs: Vec<Input>,
    /// What the user gave.
    pub given: Given,
}

/// The datatypes requests can be built in: name and bytes per element.
const DATATYPES: [(&str, usize); 11] = [
    ("BOOL", 1),
    ("UINT8", 1),
    ("UINT16", 2),
    ("UINT32", 4),
    ("UINT64", 8),
    ("INT8", 1),
    ("INT16", 2),
    ("INT32", 4),
    ("INT64", 8),
    ("FP32", 4),
    ("FP64", 8),
];

/// The datatype named `name` and its element size, if requests can be built in it.
pub fn datatype(name: &str) -> Option<(&'static str, usize)> {
    DATATYPES.iter().copied().find(|(n, _)| *n == name)
}

impl Described {
    /// The model's `inputs` (name, datatype, shape) with `given`; every given shape names an input
    /// and agrees with its rank and fixed dimensions.
    pub fn new(
        model: &str,
        inputs: Vec<(String, String, Vec<i64>)>,
        given: Given,
    ) -> Result<Described, String> {
        let mut out = Vec::new();
        for (name, dt, dims) in inputs {
            let (datatype, _) = datatype(&dt).ok_or_else(|| {
                format!("model '{model}' input '{name}' is {dt}: spork load builds BOOL, UINT*, INT* and FP32/FP64 inputs")
            })?;
            out.push(Input { name, datatype, dims });
        }
        for (name, shape) in &given.shapes {
            let Some(i) = out.iter().find(|i| &i.name == name) else {
                let names: Vec<&str> = out.iter().map(|i| i.name.as_str()).collect();
                return Err(format!(
                    "--shape {name}: model '{model}' has no input '{name}' (it has {})",
                    names.join(", ")
                ));
            };
            agrees(i, shape).map_err(|why| format!("--shape {name}: {why}"))?;
        }
        Ok(Described { inputs: out, given })
    }

    /// Whether every input's shape is fixed (given or stated): request sizes then change nothing.
    pub fn all_fixed(&self) -> bool {
        self.inputs.iter().all(|i| self.given.shapes.contains_key(&i.name) || i.dims.iter().all(|&d| d >= 0))
    }

    /// The items a request sized for `items` holds: its first input's elements (a data file's
    /// requests: `items`, as asked).
    pub fn items(&self, items: u64) -> u64 {
        match (&self.given.data, self.inputs.first()) {
            (Data::File(_), _) | (_, None) => items,
            (_, Some(i)) => self.shape(i, items).iter().product(),
        }
    }

    /// Request `index`'s inputs for a request of `items` items, its random data drawn from `seed`.
    pub fn tensors(&self, items: u64, seed: u64, index: u64) -> Result<Vec<WireTensor>, String> {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
        let entry = match &self.given.data {
            Data::File(entries) if entries.is_empty() => return Err("the data file holds no entries".into()),
            Data::File(entries) => Some(&entries[(index % entries.len() as u64) as usize]),
            _ => None,
        };
        self.inputs
            .iter()
            .map(|i| {
                let from_file = entry.map(|e| {
                    e.get(&i.name)
                        .ok_or_else(|| format!("the data file's entry {index} has no input '{}'", i.name))
                });
                match from_file.transpose()? {
                    Some(t) => self.file_tensor(i, t),
                    None => {
                        let shape = self.shape(i, items);
                        let zero = matches!(self.given.data, Data::Zero);
                        Ok(tensor(i, shape, |bytes| fill(i.datatype, bytes, zero, &mut rng)))
                    }
                }
            })
            .collect()
    }

    /// `i`'s shape for a request of `items` items: given, or each variable dimension the `k`-th root
    /// of the items (`k` of them), so that its elements are about the items.
    fn shape(&self, i: &Input, items: u64) -> Vec<u64> {
        if let Some(s) = self.given.shapes.get(&i.name) {
            return s.clone();
        }
        let variable = i.dims.iter().filter(|&&d| d < 0).count().max(1) as f64;
        let side = ((items.max(1) as f64).powf(1.0 / variable).round() as u64).max(1);
        i.dims.iter().map(|&d| if d < 0 { side } else { d as u64 }).collect()
    }

    /// `i` from a data file's values: its shape the file's, the given one, or the stated one with its
    /// one variable dimension taken from the values' count.
    fn file_tensor(&self, i: &Input, t: &FileTensor) -> Result<WireTensor, String> {
        let n = t.content.len() as u64;
        let shape = match (&t.shape, self.given.shapes.get(&i.name)) {
            (Some(s), _) | (None, Some(s)) => s.clone(),
            (None, None) => {
                let fixed: u64 = i.dims.iter().filter(|&&d| d >= 0).map(|&d| d as u64).product();
                match i.dims.iter().filter(|&&d| d < 0).count() {
                    0 => i.dims.iter().map(|&d| d as u64).collect(),
                    1 if fixed > 0 && n.is_multiple_of(fixed) => {
                        i.dims.iter().map(|&d| if d < 0 { n / fixed } else { d as u64 }).collect()
                    }
                    _ => {
                        return Err(format!(
                            "input '{}': give its \"shape\" in the data file or --shape",
                            i.name
                        ));
                    }
                }
            }
        };
        agrees(i, &shape)?;
        let elements: u64 = shape.iter().product();
        if elements != n {
            return Err(format!("input '{}': {n} values for shape {shape:?} ({elements} elements)", i.name));
        }
        let mut values = t.content.iter();
        Ok(tensor(i, shape, |bytes| {
            let size = datatype(i.datatype).map_or(1, |d| d.1);
            for chunk in bytes.chunks_mut(size) {
                encode(i.datatype, values.next().copied().unwrap_or(0.0), chunk);
            }
        }))
    }
}

/// Whether `shape` fits `i`: its rank, and its fixed dimensions.
fn agrees(i: &Input, shape: &[u64]) -> Result<(), String> {
    if shape.len() != i.dims.len() {
        return Err(format!(
            "input '{}' has {} dimensions ({:?}), not {}",
            i.name,
            i.dims.len(),
            i.dims,
            shape.len()
        ));
    }
    match i.dims.iter().zip(shape).find(|(d, s)| **d >= 0 && **d as u64 != **s) {
        Some(_) => Err(format!("input '{}' is {:?} (-1: any), not {shape:?}", i.name, i.dims)),
        None => Ok(()),
    }
}

/// A tensor of `i` of `shape`, its bytes written by `write`.
fn tensor(i: &Input, shape: Vec<u64>, write: impl FnOnce(&mut [u8])) -> WireTensor {
    let size = datatype(i.datatype).map_or(1, |d| d.1);
    let elements: u64 = shape.iter().product();
    let mut bytes = vec![0u8; elements as usize * size];
    write(&mut bytes);
    WireTensor {
        name: i.name.clone(),
        datatype: i.datatype,
        shape: shape.iter().map(|&d| d as i64).collect(),
        data: bytes.into(),
    }
}

/// Random (or zero) elements of `datatype`.
fn fill(datatype: &str, bytes: &mut [u8], zero: bool, rng: &mut impl Rng) {
    if zero {
        return;
    }
    match datatype {
        "BOOL" => bytes.iter_mut().for_each(|b| *b = rng.random_range(0..2)),
        "FP32" => bytes.chunks_mut(4).for_each(|c| encode("FP32", rng.random_range(-1.0..1.0), c)),
        "FP64" => bytes.chunks_mut(8).for_each(|c| encode("FP64", rng.random_range(-1.0..1.0), c)),
        _ => rng.fill_bytes(bytes),
    }
}

/// `v` as one little-endian element of `datatype` into `out` (saturating to the type's range).
fn encode(datatype: &str, v: f64, out: &mut [u8]) {
    match datatype {
        "BOOL" => out[0] = u8::from(v != 0.0),
        "UINT8" => out[0] = v as u8,
        "UINT16" => out.copy_from_slice(&(v as u16).to_le_bytes()),
        "UINT32" => out.copy_from_slice(&(v as u32).to_le_bytes()),
        "UINT64" => out.copy_from_slice(&(v as u64).to_le_bytes()),
        "INT8" => out.copy_from_slice(&(v as i8).to_le_bytes()),
        "INT16" => out.copy_from_slice(&(v as i16).to_le_bytes()),
        "INT32" => out.copy_from_slice(&(v as i32).to_le_bytes()),
        "INT64" => out.copy_from_slice(&(v as i64).to_le_bytes()),
        "FP32" => out.copy_from_slice(&(v as f32).to_le_bytes()),
        _ => out.copy_from_slice(&v.to_le_bytes()),
    }
}

/// A data file in perf_analyzer's form, read within `most` bytes.
pub fn read_data(path: &Path, most: u64) -> Result<Data, String> {
    let shown = path.display();
    let size = std::fs::metadata(path).map_err(|e| format!("--data {shown}: {e}"))?.len();
    if size > most {
        return Err(format!("--data {shown}: {size} bytes, more than the {most} read"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("--data {shown}: {e}"))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("--data {shown}: {e}"))?;
    let entries = v.get("data").and_then(|d| d.as_array()).ok_or_else(|| {
        format!(
            "--data {shown}: no \"data\" list (perf_analyzer's form: {{\"data\": [{{\"INPUT\": [values]}}]}})"
        )
    })?;
    entries
        .iter()
        .enumerate()
        .map(|(n, e)| {
            let e = e.as_object().ok_or_else(|| format!("--data {shown}: entry {n} is not an object"))?;
            e.iter()
                .map(|(name, t)| {
                    Ok((
                        name.clone(),
                        file_tensor(t).map_err(|w| format!("--data {shown}: entry {n}, '{name}': {w}"))?,
                    ))
                })
                .collect()
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Data::File)
}

fn file_tensor(t: &serde_json::Value) -> Result<FileTensor, String> {
    let numbers = |v: &serde_json::Value| -> Result<Vec<f64>, String> {
        let list = v.as_array().ok_or("not a list of numbers")?;
        list.iter()
            .map(|x| x.as_f64().or_else(|| x.as_bool().map(f64::from)).ok_or("not a number".to_string()))
            .collect()
    };
    match t.get("content") {
        Some(c) => {
            let shape = match t.get("shape") {
                Some(s) => Some(
                    s.as_array()
                        .ok_or("\"shape\" is not a list")?
                        .iter()
                        .map(|d| d.as_u64().ok_or("a dimension is not a whole number"))
                        .collect::<Result<Vec<u64>, _>>()?,
                ),
                None => None,
            };
            Ok(FileTensor { content: numbers(c)?, shape })
        }
        None => Ok(FileTensor { content: numbers(t)?, shape: None }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Described {
        let inputs =
            vec![("image".into(), "UINT8".into(), vec![-1, -1]), ("bias".into(), "INT16".into(), vec![4])];
        Described::new("m", inputs, Given::default()).unwrap()
    }

    #[test]
    fn variable_dimensions_share_the_items_and_fixed_ones_stay() {
        let t = model().tensors(4096, 1, 0).unwrap();
        assert_eq!(t[0].shape, [64, 64]);
        assert_eq!(t[0].data.len(), 4096);
        assert_eq!(t[1].shape, [4]);
        assert_eq!(t[1].data.len(), 8);
    }

    #[test]
    fn a_given_shape_must_fit_the_inputs_rank_and_fixed_dimensions() {
        let inputs = || vec![("bias".to_string(), "INT16".to_string(), vec![4i64])];
        let given = |s: Vec<u64>| Given { shapes: [("bias".to_string(), s)].into(), data: Data::Random };
        assert!(Described::new("m", inputs(), given(vec![4])).is_ok());
        assert!(Described::new("m", inputs(), given(vec![5])).unwrap_err().contains("not [5]"));
        assert!(Described::new("m", inputs(), given(vec![4, 1])).unwrap_err().contains("1 dimensions"));
        let other = Given { shapes: [("nosuch".to_string(), vec![1])].into(), data: Data::Random };
        assert!(Described::new("m", inputs(), other).unwrap_err().contains("has no input 'nosuch'"));
    }

    #[test]
    fn file_data_fills_the_variable_dimension_and_is_encoded_little_endian() {
        let entry = BTreeMap::from([
            ("image".to_string(), FileTensor { content: vec![1.0, 2.0, 3.0, 4.0], shape: Some(vec![2, 2]) }),
            ("bias".to_string(), FileTensor { content: vec![-1.0, 0.0, 1.0, 300.0], shape: None }),
        ]);
        let mut m = model();
        m.given.data = Data::File(vec![entry]);
        let t = m.tensors(1, 1, 7).unwrap();
        assert_eq!(&t[0].data[..], [1, 2, 3, 4]);
        assert_eq!(&t[1].data[..], [0xff, 0xff, 0, 0, 1, 0, 0x2c, 0x01]);
        m.given.data = Data::File(vec![BTreeMap::new()]);
        assert!(m.tensors(1, 1, 0).unwrap_err().contains("no input 'image'"));
    }
}
