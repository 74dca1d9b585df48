//! URLs as messages show them: a kubeconfig's server may carry a user and password
//! (`https://user:password@host`), which no message, log or hint ever repeats.

/// `url` as messages show it: without the user and password a URL may carry
/// (`https://user:password@host` → `https://host`).
pub fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.find("//") {
        Some(at) => url.split_at(at + 2),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    format!("{scheme}{host}{path}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_are_shown_without_their_user_and_password() {
        for (url, shown) in [
            (
                "https://admin:s3cret@10.0.0.1:6443/base",
                "https://10.0.0.1:6443/base",
            ),
            ("https://u@host", "https://host"),
            ("https://host:6443", "https://host:6443"),
            ("//a:b@host", "//host"),
            ("a:b@host:6443", "host:6443"),
            ("https://host/p@th", "https://host/p@th"),
        ] {
            assert_eq!(super::without_userinfo(url), shown);
        }
    }
}
