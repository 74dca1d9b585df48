//! How clap spells the value of `-o`, `--dry-run` and `--color`: the names `choices` gives them.

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::choices::{ColorChoice, DryRun, OutputFormat};

macro_rules! spelled_by_name {
    ($($choice:ty),*) => {$(
        impl ValueEnum for $choice {
            fn value_variants<'a>() -> &'a [Self] {
                &<$choice>::ALL
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(PossibleValue::new(self.name()))
            }
        }
    )*};
}

spelled_by_name!(OutputFormat, DryRun, ColorChoice);
