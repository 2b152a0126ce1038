//! Words a server or a file spells (a run's state, a query's state, a snapshot's
//! operation, an audit record's outcome), parsed once into an enum where they enter and
//! never compared as text again. The word the enum does not know is kept, as spelled, in
//! its catch-all variant: it is a server's string like any other, made visible where it
//! is shown.

/// `spelled! { /// doc  Name else Other { Variant = "text", … } }`: the enum, its
/// catch-all variant (`Other(String)` here), `parse` (every text reads), `as_str` (the
/// spelling it was read from), `Display`, and serde as that spelling.
macro_rules! spelled {
    ($(#[$meta:meta])* $name:ident else $other:ident {
        $($(#[$vmeta:meta])* $var:ident = $text:literal),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $var,)*
            /// A word this version of floe does not know, as it was spelled.
            $other(String),
        }

        impl $name {
            pub fn parse(text: &str) -> $name {
                match text {
                    $($text => $name::$var,)*
                    other => $name::$other(other.to_string()),
                }
            }

            /// The spelling it was read from.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$var => $text,)*
                    $name::$other(s) => s,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                Ok($name::parse(&s))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

pub(crate) use spelled;
