//! One value per worker type, indexed by [`Kind`] rather than by a bare array position.

use super::platform::Kind;
use serde::Serialize;
use std::ops::{Index, IndexMut};

/// A value for CPUs and one for FPGAs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct PerKind<T> {
    /// For CPU workers.
    pub cpu: T,
    /// For FPGA workers.
    pub fpga: T,
}

impl<T> PerKind<T> {
    /// `cpu` and `fpga`.
    pub const fn new(cpu: T, fpga: T) -> Self {
        PerKind { cpu, fpga }
    }

    /// Both from one function of the kind.
    pub fn from_fn(mut f: impl FnMut(Kind) -> T) -> Self {
        PerKind { cpu: f(Kind::Cpu), fpga: f(Kind::Fpga) }
    }

    /// Each value mapped.
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> PerKind<U> {
        PerKind { cpu: f(self.cpu), fpga: f(self.fpga) }
    }

    /// The values, CPU first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        [&self.cpu, &self.fpga].into_iter()
    }
}

impl<T: Copy + std::iter::Sum<T>> PerKind<T> {
    /// Both added.
    pub fn total(&self) -> T {
        [self.cpu, self.fpga].into_iter().sum()
    }
}

impl<T> Index<Kind> for PerKind<T> {
    type Output = T;
    #[inline]
    fn index(&self, kind: Kind) -> &T {
        match kind {
            Kind::Cpu => &self.cpu,
            Kind::Fpga => &self.fpga,
        }
    }
}

impl<T> IndexMut<Kind> for PerKind<T> {
    #[inline]
    fn index_mut(&mut self, kind: Kind) -> &mut T {
        match kind {
            Kind::Cpu => &mut self.cpu,
            Kind::Fpga => &mut self.fpga,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_by_kind_and_totals() {
        let mut v = PerKind::new(1u64, 2);
        v[Kind::Fpga] += 5;
        assert_eq!((v[Kind::Cpu], v[Kind::Fpga], v.total()), (1, 7, 8));
        assert_eq!(PerKind::from_fn(|k| k.name()).fpga, "fpga");
        assert_eq!(v.map(|x| x * 2), PerKind::new(2, 14));
    }
}
