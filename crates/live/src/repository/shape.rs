//! Shapes with named dimensions: the inputs bind each name to a size within its bounds, and the
//! outputs' shapes follow, so every buffer is sized before a kernel runs.

/// A variable dimension and its bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dim {
    /// Its name, as shapes and `items` write it.
    pub name: String,
    /// The smallest size a request may give (at least 1).
    pub min: u64,
    /// The largest size a request may give: buffers are bounded by it.
    pub max: u64,
}

/// One entry of a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimExpr {
    /// A fixed size.
    Fixed(u64),
    /// Dimension `var` (an index into the model's dims) plus `offset`.
    Var {
        /// Index into the model's dims.
        var: usize,
        /// Added to the dimension's size (`N-2`: -2).
        offset: i64,
    },
}

impl DimExpr {
    /// `"N"`, `"N-2"` or `"N+1"` over `dims`.
    pub fn parse(s: &str, dims: &[Dim]) -> Result<DimExpr, String> {
        let s = s.trim();
        let (name, offset) = match s.find(['-', '+']) {
            Some(i) => {
                let k: i64 =
                    s[i + 1..].trim().parse().map_err(|_| format!("'{s}' is not NAME, NAME-k or NAME+k"))?;
                if !(0..=1 << 20).contains(&k) {
                    return Err(format!("the offset in '{s}' is out of range"));
                }
                (s[..i].trim(), if &s[i..=i] == "-" { -k } else { k })
            }
            None => (s, 0),
        };
        let var =
            dims.iter().position(|d| d.name == name).ok_or_else(|| format!("'{name}' is not in [dims]"))?;
        Ok(DimExpr::Var { var, offset })
    }

    /// The dimension index it names, if any.
    pub fn var(&self) -> Option<usize> {
        match self {
            DimExpr::Var { var, .. } => Some(*var),
            DimExpr::Fixed(_) => None,
        }
    }

    /// Its size with every dimension at `values`; negative sizes read as 0.
    pub fn eval(&self, values: &[u64]) -> u64 {
        match *self {
            DimExpr::Fixed(n) => n,
            DimExpr::Var { var, offset } => values[var].saturating_add_signed(offset),
        }
    }

    /// Its size with every dimension at its minimum (signed: an offset may make it negative).
    pub fn at_min(&self, dims: &[Dim]) -> i128 {
        match *self {
            DimExpr::Fixed(n) => n.into(),
            DimExpr::Var { var, offset } => i128::from(dims[var].min) + i128::from(offset),
        }
    }

    /// Its size with every dimension at its maximum.
    pub fn at_max(&self, dims: &[Dim]) -> u64 {
        let values: Vec<u64> = dims.iter().map(|d| d.max).collect();
        self.eval(&values)
    }

    /// How a message shows it.
    pub fn show(&self, dims: &[Dim]) -> String {
        match *self {
            DimExpr::Fixed(n) => n.to_string(),
            DimExpr::Var { var, offset: 0 } => dims[var].name.clone(),
            DimExpr::Var { var, offset } if offset < 0 => format!("{}{offset}", dims[var].name),
            DimExpr::Var { var, offset } => format!("{}+{offset}", dims[var].name),
        }
    }
}

/// Binds `dims` from `shapes` (one per input, matched with `specs`); the first disagreement or
/// out-of-bounds size is the error, naming the tensor, the dimension and its bounds.
pub fn bind(dims: &[Dim], specs: &[(&str, &[DimExpr])], shapes: &[&[u64]]) -> Result<Vec<u64>, String> {
    let mut values: Vec<Option<u64>> = vec![None; dims.len()];
    for ((name, spec), shape) in specs.iter().zip(shapes) {
        if spec.len() != shape.len() {
            return Err(format!(
                "input '{name}' has {} dimensions, the model takes {}",
                shape.len(),
                spec.len()
            ));
        }
        for (e, &got) in spec.iter().zip(shape.iter()) {
            match *e {
                DimExpr::Fixed(n) if n != got => {
                    return Err(format!("input '{name}' has a dimension of {got} where the model takes {n}"));
                }
                DimExpr::Fixed(_) => {}
                DimExpr::Var { var, .. } => {
                    let d = &dims[var];
                    if !(d.min..=d.max).contains(&got) {
                        return Err(format!(
                            "input '{name}': {} = {got} is outside {}..={}",
                            d.name, d.min, d.max
                        ));
                    }
                    match values[var] {
                        Some(v) if v != got => {
                            return Err(format!(
                                "input '{name}': {} = {got}, but another input has {} = {v}",
                                d.name, d.name
                            ));
                        }
                        _ => values[var] = Some(got),
                    }
                }
            }
        }
    }
    Ok(values.into_iter().map(|v| v.unwrap_or(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims() -> Vec<Dim> {
        vec![Dim { name: "H".into(), min: 3, max: 100 }, Dim { name: "W".into(), min: 3, max: 256 }]
    }

    #[test]
    fn expressions_parse_evaluate_and_show() {
        let d = dims();
        let e = DimExpr::parse("W-2", &d).unwrap();
        assert_eq!(e, DimExpr::Var { var: 1, offset: -2 });
        assert_eq!((e.eval(&[5, 9]), e.at_min(&d), e.at_max(&d), e.show(&d)), (7, 1, 254, "W-2".into()));
        assert_eq!(DimExpr::parse(" H + 1 ", &d).unwrap().eval(&[5, 9]), 6);
        assert!(DimExpr::parse("Z", &d).unwrap_err().contains("not in [dims]"));
        assert!(DimExpr::parse("H*2", &d).is_err());
    }

    #[test]
    fn binding_checks_rank_fixed_sizes_bounds_and_agreement() {
        let d = dims();
        let img = [DimExpr::Var { var: 0, offset: 0 }, DimExpr::Var { var: 1, offset: 0 }];
        let row = [DimExpr::Fixed(1), DimExpr::Var { var: 1, offset: 0 }];
        let specs = [("image", &img[..]), ("row", &row[..])];
        assert_eq!(bind(&d, &specs, &[&[4, 7], &[1, 7]]).unwrap(), vec![4, 7]);
        assert!(bind(&d, &specs, &[&[4, 7], &[1, 8]]).unwrap_err().contains("another input has W = 7"));
        assert!(bind(&d, &specs, &[&[2, 7], &[1, 7]]).unwrap_err().contains("H = 2 is outside 3..=100"));
        assert!(bind(&d, &specs, &[&[4, 7], &[2, 7]]).unwrap_err().contains("takes 1"));
        assert!(bind(&d, &specs, &[&[4], &[1, 7]]).unwrap_err().contains("1 dimensions"));
    }
}
