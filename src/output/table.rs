//! kubectl-looking tables: upper-case headers, space-separated columns, no borders.

use comfy_table::{ContentArrangement, Table};

pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut table = Table::new();
    table
        .load_style(comfy_table::presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(headers.to_vec());
    for row in rows {
        table.add_row(row);
    }
    // kubectl starts at column 0 and separates columns by three spaces.
    for column in table.column_iter_mut() {
        column.set_padding((0, 3));
    }
    let mut out = String::new();
    for line in table.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_like_kubectl() {
        let text = table(
            &["NAME", "READY"],
            vec![
                vec!["alpha".into(), "True".into()],
                vec!["b".into(), "False".into()],
            ],
        );
        assert_eq!(text, "NAME    READY\nalpha   True\nb       False\n");
    }
}
