//! Names the user types, checked by the rules the API server applies, before any request: a bad
//! name is named with the rule it breaks instead of failing deep inside a request's URL.

/// A namespace (`-n`): a DNS-1123 label.
pub fn namespace(name: &str) -> Result<(), String> {
    dns_label(name).map_err(|rule| format!("invalid namespace \"{name}\" (-n): {rule}"))
}

/// A Cluster API Cluster's name: a DNS-1123 subdomain, as every object name, of at most 63
/// characters, since Cluster API writes it as the value of the label
/// `cluster.x-k8s.io/cluster-name` on every object of the Cluster. `flag` names the flag that
/// gave it (`--to-cluster`), if not a positional name.
pub fn cluster_name(name: &str, flag: Option<&str>) -> Result<(), String> {
    let rule = match name.len() <= 63 {
        true => dns_subdomain(name).map_err(str::to_string),
        false => Err(cluster_name_length_rule()),
    };
    rule.map_err(|rule| {
        let given = flag.map(|f| format!(" ({f})")).unwrap_or_default();
        format!("invalid Cluster name \"{name}\"{given}: {rule}")
    })
}

/// A label selector (`-l`), in the syntax kubectl takes: `key`, `!key`, `key=value`,
/// `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>1`, `key<1`, joined by
/// commas.
pub fn label_selector(selector: &str) -> Result<(), String> {
    parse_selector(selector)
        .map_err(|problem| format!("invalid label selector \"{selector}\" (-l): {problem}"))
}

const LABEL_RULE: &str = "a DNS-1123 label is at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit";
/// Why a Cluster's name is at most 63 characters.
fn cluster_name_length_rule() -> String {
    format!(
        "a Cluster's name is at most 63 characters, as Cluster API writes it as the value of the label {}",
        crate::names::CLUSTER_NAME_LABEL
    )
}
const SUBDOMAIN_RULE: &str = "a DNS-1123 subdomain is at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit";

fn alphanumeric_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn dns_label(name: &str) -> Result<(), &'static str> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| alphanumeric_lower(c) || c == '-')
        && name.starts_with(alphanumeric_lower)
        && name.ends_with(alphanumeric_lower);
    ok.then_some(()).ok_or(LABEL_RULE)
}

fn dns_subdomain(name: &str) -> Result<(), &'static str> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|part| dns_label(part).is_ok());
    ok.then_some(()).ok_or(SUBDOMAIN_RULE)
}

/// A label's name part or value: at most 63 letters, digits, '-', '_' and '.', starting and
/// ending with a letter or digit (a value may be empty).
fn label_word(word: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    word.len() <= 63
        && word.chars().all(|c| alnum(c) || "-_.".contains(c))
        && (word.is_empty() || (word.starts_with(alnum) && word.ends_with(alnum)))
}

fn label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && dns_subdomain(prefix).is_err()
    {
        return Err(format!(
            "the prefix of key \"{key}\" must be a DNS-1123 subdomain (e.g. example.com)"
        ));
    }
    if name.is_empty() || !label_word(name) {
        return Err(format!(
            "key \"{key}\" must be at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, with an optional DNS subdomain prefix and '/'"
        ));
    }
    Ok(())
}

fn label_value(value: &str) -> Result<(), String> {
    match label_word(value) {
        true => Ok(()),
        false => Err(format!(
            "value \"{value}\" must be empty or at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
        )),
    }
}

/// The selector's tokens, as kubectl's lexer cuts them.
#[derive(Debug, PartialEq)]
enum Token<'a> {
    Word(&'a str),
    Op(&'static str),
}

fn tokens(selector: &str) -> Vec<Token<'_>> {
    const OPS: [&str; 9] = ["!=", "==", "=", "!", "(", ")", ",", ">", "<"];
    let mut out = Vec::new();
    let mut rest = selector;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return out;
        }
        if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
            out.push(Token::Op(op));
            rest = &rest[op.len()..];
            continue;
        }
        let end = rest
            .find(|c: char| c.is_whitespace() || "!=(),<>".contains(c))
            .unwrap_or(rest.len());
        out.push(Token::Word(&rest[..end]));
        rest = &rest[end..];
    }
}

fn parse_selector(selector: &str) -> Result<(), String> {
    let tokens = tokens(selector);
    if tokens.is_empty() {
        return Err("it is empty; pass a selector such as env=prod".into());
    }
    let mut at = 0;
    loop {
        // One requirement.
        let negated = op(&tokens, at) == Some("!");
        if negated {
            at += 1;
        }
        let key = word(&tokens, at)
            .ok_or_else(|| "a requirement must start with a label key".to_string())?;
        label_key(key)?;
        at += 1;
        if !negated {
            at = after_key(&tokens, at, key)?;
        }
        match tokens.get(at) {
            None => return Ok(()),
            Some(Token::Op(",")) => at += 1,
            Some(other) => {
                let shown = match other {
                    Token::Word(w) => *w,
                    Token::Op(o) => *o,
                };
                return Err(format!(
                    "unexpected \"{shown}\" after \"{key}\"; requirements are joined by commas (a=b,c!=d)"
                ));
            }
        }
    }
}

/// The word at `at`, if a word is there.
fn word<'t>(tokens: &[Token<'t>], at: usize) -> Option<&'t str> {
    match tokens.get(at) {
        Some(Token::Word(w)) => Some(*w),
        _ => None,
    }
}

/// The operator at `at`, if one is there.
fn op<'t>(tokens: &[Token<'t>], at: usize) -> Option<&'t str> {
    match tokens.get(at) {
        Some(Token::Op(o)) => Some(*o),
        _ => None,
    }
}

/// What may follow label `key` at `at` (an operator and its value or list, or nothing): where
/// the requirement ends.
fn after_key(tokens: &[Token<'_>], mut at: usize, key: &str) -> Result<usize, String> {
    match (op(tokens, at), word(tokens, at)) {
        (Some("=" | "==" | "!="), _) => {
            at += 1;
            // Without a word after it, `key=` selects the empty value.
            if let Some(value) = word(tokens, at) {
                label_value(value)?;
                at += 1;
            }
        }
        (Some(">" | "<"), _) => {
            at += 1;
            let value =
                word(tokens, at).ok_or_else(|| format!("\"{key}\" > and < need a whole number"))?;
            if value.parse::<i64>().is_err() {
                return Err(format!("\"{value}\" after > or < must be a whole number"));
            }
            at += 1;
        }
        (_, Some("in" | "notin")) => {
            at += 1;
            if op(tokens, at) != Some("(") {
                return Err(format!(
                    "\"{key}\" in and notin need a list in parentheses, e.g. {key} in (a,b)"
                ));
            }
            at = value_list(tokens, at + 1, key)?;
        }
        _ => {}
    }
    Ok(at)
}

/// The values of an `in`/`notin` list from `at` (after its `(`) to its `)`: where it ends.
fn value_list(tokens: &[Token<'_>], mut at: usize, key: &str) -> Result<usize, String> {
    let unclosed = || format!("the list after \"{key}\" is not closed with ')'");
    loop {
        match (word(tokens, at), op(tokens, at)) {
            (Some(value), _) => {
                label_value(value)?;
                at += 1;
            }
            (None, Some(",") | Some(")")) => {}
            _ => return Err(unclosed()),
        }
        match op(tokens, at) {
            Some(",") => at += 1,
            Some(")") => return Ok(at + 1),
            _ => return Err(unclosed()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_dns_labels() {
        for good in ["default", "ns-1", "a", &"a".repeat(63)] {
            assert!(namespace(good).is_ok(), "{good}");
        }
        for bad in [
            "a b",
            "",
            "Default",
            "-a",
            "a-",
            "a.b",
            &"a".repeat(64),
            "ns/1",
        ] {
            let error = namespace(bad).unwrap_err();
            assert!(error.contains("DNS-1123 label"), "{bad}: {error}");
        }
    }

    #[test]
    fn cluster_names_are_dns_subdomains() {
        for good in ["workload-1", "a.b.c", "x"] {
            assert!(cluster_name(good, None).is_ok(), "{good}");
        }
        for bad in ["a b", "A", "a..b", ".a", "a_b", ""] {
            assert!(
                cluster_name(bad, None)
                    .unwrap_err()
                    .contains("DNS-1123 subdomain"),
                "{bad}"
            );
        }
    }

    #[test]
    fn selectors_are_read_as_kubectl_reads_them() {
        for good in [
            "env=prod",
            "env==prod,tier!=db",
            "env",
            "!env",
            "env in (a,b), tier notin (c)",
            "env in (a,)",
            "example.com/team=x",
            "size>3",
            "env=",
            "env in ( a , b )",
            "a=b, !c",
        ] {
            assert!(
                label_selector(good).is_ok(),
                "{good}: {:?}",
                label_selector(good)
            );
        }
        for (bad, says) in [
            ("", "empty"),
            ("env=prod tier=db", "joined by commas"),
            ("env in (a,b", "not closed"),
            ("env in a", "need a list in parentheses"),
            ("=prod", "must start with a label key"),
            ("env=pro d", "joined by commas"),
            ("env=-x", "value \"-x\""),
            ("Bad Key=1", "joined by commas"),
            ("bad_/key=1", "prefix"),
            ("size>three", "whole number"),
            ("a=b,", "must start with a label key"),
        ] {
            let error = label_selector(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
