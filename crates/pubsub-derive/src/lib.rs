//! `#[derive(TopicType)]` and `#[derive(DdsEnum)]` for `detpath-pubsub`: a
//! Rust struct declared once becomes a DDS topic type (type name,
//! extensibility, `@key` fields, bounds), encoded in XCDR1 and XCDR2 by
//! `detpath_pubsub::xcdr` (which also says why this is a derive of our own
//! and not serde with a CDR crate). Use them through `detpath_pubsub`,
//! which re-exports both; its `xcdr` module has a longer example
//! (XCDR2, appendable, an enum, encode and decode).
//!
//! Attributes:
//! - on the struct, `#[dds(type_name = "Mod::Name")]` (default: the Rust
//!   name), `#[dds(appendable)]` or `#[dds(extensibility = "appendable")]`
//!   (default final);
//! - on a field, `#[key]` (or `#[dds(key)]`), `#[dds(bound = N)]` for a
//!   bounded `String` or `Vec`, `#[dds(skip)]` for a field that is not on
//!   the wire (left as it is by reads).
//!
//! ```
//! use detpath_pubsub::TopicType;
//! #[derive(TopicType, Clone, Debug, Default, PartialEq)]
//! #[dds(type_name = "demo::Reading")]
//! struct Reading {
//!     #[key]
//!     sensor: u32,
//!     celsius: f64,
//! }
//! assert_eq!((Reading::TYPE_NAME, Reading::KEYED), ("demo::Reading", true));
//! // The key hash: the key field alone, big endian, zero-padded to 16 bytes.
//! let r = Reading { sensor: 7, celsius: 21.5 };
//! assert_eq!(r.key_hash(), Some([0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
//! ```

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitInt, LitStr};

/// Makes a struct with named fields a topic type: implements
/// `detpath_pubsub::types::TopicType` and `detpath_pubsub::xcdr::CdrEncode`
/// (so it can also be a field of another derived struct). See the crate
/// documentation for the attributes and `detpath_pubsub::xcdr` for an example.
#[proc_macro_derive(TopicType, attributes(dds, key))]
pub fn derive_topic_type(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    topic_type(&input).unwrap_or_else(|e| e.to_compile_error()).into()
}

/// Makes a C-like enum (no fields; explicit values allowed) an IDL enum: a
/// 32-bit value on the wire; a value the enum lacks is a malformed sample.
/// The enum must be `Copy`.
#[proc_macro_derive(DdsEnum)]
pub fn derive_dds_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    dds_enum(&input).unwrap_or_else(|e| e.to_compile_error()).into()
}

struct Field {
    ident: syn::Ident,
    ty: syn::Type,
    key: bool,
    bound: Option<LitInt>,
    skip: bool,
}

struct TypeAttrs {
    type_name: Option<LitStr>,
    appendable: bool,
}

fn type_attrs(input: &DeriveInput) -> syn::Result<TypeAttrs> {
    let mut a = TypeAttrs { type_name: None, appendable: false };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("dds")) {
        attr.parse_nested_meta(|m| {
            if m.path.is_ident("type_name") {
                a.type_name = Some(m.value()?.parse()?);
            } else if m.path.is_ident("appendable") {
                a.appendable = true;
            } else if m.path.is_ident("final") {
                a.appendable = false;
            } else if m.path.is_ident("extensibility") {
                let v: LitStr = m.value()?.parse()?;
                a.appendable = match v.value().as_str() {
                    "final" => false,
                    "appendable" => true,
                    other => return Err(m.error(format!("extensibility \"{other}\" is not written: use \"final\" or \"appendable\""))),
                };
            } else {
                return Err(m.error("unknown dds attribute: use type_name = \"...\", appendable, final or extensibility = \"...\""));
            }
            Ok(())
        })?;
    }
    Ok(a)
}

fn fields(input: &DeriveInput) -> syn::Result<Vec<Field>> {
    let Data::Struct(s) = &input.data else {
        return Err(syn::Error::new(input.span(), "#[derive(TopicType)] takes a struct (for C-like enums: #[derive(DdsEnum)])"));
    };
    let Fields::Named(named) = &s.fields else {
        return Err(syn::Error::new(input.span(), "#[derive(TopicType)] takes a struct with named fields"));
    };
    let mut out = Vec::new();
    for f in &named.named {
        let mut fd = Field { ident: f.ident.clone().expect("named field"), ty: f.ty.clone(), key: false, bound: None, skip: false };
        for attr in &f.attrs {
            if attr.path().is_ident("key") {
                fd.key = true;
            } else if attr.path().is_ident("dds") {
                attr.parse_nested_meta(|m| {
                    if m.path.is_ident("key") {
                        fd.key = true;
                    } else if m.path.is_ident("skip") {
                        fd.skip = true;
                    } else if m.path.is_ident("bound") {
                        fd.bound = Some(m.value()?.parse()?);
                    } else {
                        return Err(m.error("unknown dds field attribute: use key, bound = N or skip"));
                    }
                    Ok(())
                })?;
            }
        }
        if fd.skip && (fd.key || fd.bound.is_some()) {
            return Err(syn::Error::new(f.span(), "a skipped field is neither a key nor bounded"));
        }
        out.push(fd);
    }
    Ok(out)
}

fn topic_type(input: &DeriveInput) -> syn::Result<Tokens> {
    let ta = type_attrs(input)?;
    let all = fields(input)?;
    let wire: Vec<&Field> = all.iter().filter(|f| !f.skip).collect();
    let name = &input.ident;
    let (ig, tg, wc) = input.generics.split_for_impl();
    let p = quote!(::detpath_pubsub);
    let x = quote!(#p::xcdr);
    let err = quote!(#p::wire::WireError);
    let cw = quote!(#p::wire::CdrWriter<'_, '_>);
    let cr = quote!(#p::wire::CdrReader<'_>);
    let app = ta.appendable;
    let keyed = wire.iter().any(|f| f.key);
    // The key form: the key fields, or every field of a struct without any
    // (XTypes: such a struct used as a key is all key).
    let in_key = |f: &Field| f.key || !keyed;
    let type_name = match &ta.type_name {
        Some(s) => quote!(#s),
        None => {
            let s = name.to_string();
            quote!(#s)
        }
    };
    let ext = if app { quote!(#x::Extensibility::Appendable) } else { quote!(#x::Extensibility::Final) };

    let encode = wire.iter().map(|f| {
        let (id, ty) = (&f.ident, &f.ty);
        let check = f.bound.as_ref().map(|b| quote_spanned!(b.span()=> #x::check_bound(&self.#id, #b)?;));
        quote!(#check <#ty as #x::CdrEncode>::encode(&self.#id, w)?;)
    });
    let decode = wire.iter().map(|f| {
        let (id, ty) = (&f.ident, &f.ty);
        let check = f.bound.as_ref().map(|b| quote!(#x::check_bound(&self.#id, #b)?;));
        quote! {
            if #x::more(end, r) {
                <#ty as #x::CdrEncode>::decode_into(&mut self.#id, r)?;
                #check
            } else {
                <#ty as #x::CdrEncode>::clear(&mut self.#id);
            }
        }
    });
    let clear = wire.iter().map(|f| {
        let (id, ty) = (&f.ident, &f.ty);
        quote!(<#ty as #x::CdrEncode>::clear(&mut self.#id);)
    });
    let skip = wire.iter().map(|f| {
        let ty = &f.ty;
        quote!(<#ty as #x::CdrEncode>::skip(r)?;)
    });
    let min = wire.iter().map(|f| {
        let ty = &f.ty;
        quote!(+ <#ty as #x::CdrEncode>::MIN_SIZE)
    });
    let hint = wire.iter().map(|f| {
        let (id, ty) = (&f.ident, &f.ty);
        quote!(+ <#ty as #x::CdrEncode>::size_hint(&self.#id))
    });
    let key_fields: Vec<&&Field> = wire.iter().filter(|f| in_key(f)).collect();
    let key_span = key_fields.iter().fold(quote!(#x::EMPTY_SPAN), |acc, f| {
        let ty = &f.ty;
        let s = match &f.bound {
            Some(b) => quote!(#x::bounded_span(<#ty as #x::Bounded>::HEAD, <#ty as #x::Bounded>::ELEM, <#ty as #x::Bounded>::TAIL, #b)),
            None => quote!(<#ty as #x::CdrEncode>::KEY_SPAN),
        };
        quote!(#x::span_then(#acc, #s))
    });
    let encode_key = key_fields.iter().map(|f| {
        let (id, ty) = (&f.ident, &f.ty);
        quote!(<#ty as #x::CdrEncode>::encode_key(&self.#id, w)?;)
    });
    let copy_key = wire.iter().map(|f| {
        let ty = &f.ty;
        if in_key(f) {
            quote!(<#ty as #x::CdrEncode>::copy_key(r, w)?;)
        } else {
            quote!(<#ty as #x::CdrEncode>::skip(r)?;)
        }
    });
    // At the top level nothing after the last key field matters: a key hash
    // out of a payload reads no further (a 1 MiB baggage is not walked).
    let last_key = wire.iter().rposition(|f| f.key).map_or(0, |i| i + 1);
    let copy_key_top = wire[..last_key].iter().map(|f| {
        let ty = &f.ty;
        if f.key {
            quote!(<#ty as #x::CdrEncode>::copy_key(r, w)?;)
        } else {
            quote!(<#ty as #x::CdrEncode>::skip(r)?;)
        }
    });
    let copy_key_form = key_fields.iter().map(|f| {
        let ty = &f.ty;
        quote!(<#ty as #x::CdrEncode>::copy_key_form(r, w)?;)
    });

    Ok(quote! {
        impl #ig #x::CdrEncode for #name #tg #wc {
            const MIN_SIZE: usize = 0 #(#min)*;
            const KEY_SPAN: #x::Span = #x::span_dheader(#app, #key_span);
            fn encode(&self, w: &mut #cw) -> ::core::result::Result<(), #err> {
                #x::with_dheader(#app, w, |w| {
                    #(#encode)*
                    Ok(())
                })
            }
            fn decode_into(&mut self, r: &mut #cr) -> ::core::result::Result<(), #err> {
                let end = #x::read_dheader(#app, r)?;
                #(#decode)*
                #x::end_dheader(end, r)
            }
            fn clear(&mut self) {
                #(#clear)*
            }
            fn skip(r: &mut #cr) -> ::core::result::Result<(), #err> {
                match #x::read_dheader(#app, r)? {
                    Some(end) => r.skip_to(end),
                    None => {
                        #(#skip)*
                        Ok(())
                    }
                }
            }
            fn encode_key(&self, w: &mut #cw) -> ::core::result::Result<(), #err> {
                #x::with_dheader(#app, w, |w| {
                    #(#encode_key)*
                    Ok(())
                })
            }
            fn copy_key(r: &mut #cr, w: &mut #cw) -> ::core::result::Result<(), #err> {
                let end = #x::read_dheader(#app, r)?;
                #x::with_dheader(#app, w, |w| {
                    #(#copy_key)*
                    Ok(())
                })?;
                #x::end_dheader(end, r)
            }
            fn copy_key_form(r: &mut #cr, w: &mut #cw) -> ::core::result::Result<(), #err> {
                let end = #x::read_dheader(#app, r)?;
                #x::with_dheader(#app, w, |w| {
                    #(#copy_key_form)*
                    Ok(())
                })?;
                #x::end_dheader(end, r)
            }
            fn size_hint(&self) -> usize {
                // A DHEADER's room either way, and slack for padding.
                8 #(#hint)*
            }
        }

        impl #ig #p::types::TopicType for #name #tg #wc {
            const TYPE_NAME: &'static str = #type_name;
            const KEYED: bool = #keyed;
            const EXTENSIBILITY: #x::Extensibility = #ext;
            const KEY_MAX_SIZE: ::core::option::Option<usize> =
                if #keyed { #x::span_max(<Self as #x::CdrEncode>::KEY_SPAN) } else { Some(0) };
            fn serialize(&self, w: &mut #cw) -> ::core::result::Result<(), #err> {
                <Self as #x::CdrEncode>::encode(self, w)
            }
            fn deserialize_into(&mut self, r: &mut #cr) -> ::core::result::Result<(), #err> {
                #x::check_top_level(#app, r)?;
                <Self as #x::CdrEncode>::decode_into(self, r)
            }
            fn size_hint(&self) -> usize {
                4 + <Self as #x::CdrEncode>::size_hint(self)
            }
            fn serialize_key(&self, w: &mut #cw) -> ::core::result::Result<(), #err> {
                <Self as #x::CdrEncode>::encode_key(self, w)
            }
            fn key_hash_of(payload: &[u8]) -> ::core::option::Option<[u8; 16]> {
                if !#keyed {
                    return None;
                }
                #p::types::key_hash_from_payload(payload, <Self as #p::types::TopicType>::KEY_MAX_SIZE, |r, w| {
                    #x::check_top_level(#app, r)?;
                    let _end = #x::read_dheader(#app, r)?;
                    #x::with_dheader(#app, w, |w| {
                        #(#copy_key_top)*
                        Ok(())
                    })
                })
            }
            fn key_hash_of_key(payload: &[u8]) -> ::core::option::Option<[u8; 16]> {
                if !#keyed {
                    return None;
                }
                #p::types::key_hash_from_payload(payload, <Self as #p::types::TopicType>::KEY_MAX_SIZE, |r, w| {
                    <Self as #x::CdrEncode>::copy_key_form(r, w)
                })
            }
        }
    })
}

fn dds_enum(input: &DeriveInput) -> syn::Result<Tokens> {
    let Data::Enum(e) = &input.data else {
        return Err(syn::Error::new(input.span(), "#[derive(DdsEnum)] takes a C-like enum"));
    };
    let Some(first) = e.variants.first() else {
        return Err(syn::Error::new(input.span(), "an IDL enum has at least one value"));
    };
    for v in &e.variants {
        if !matches!(v.fields, Fields::Unit) {
            return Err(syn::Error::new(v.span(), "#[derive(DdsEnum)] takes variants without fields"));
        }
    }
    let name = &input.ident;
    let p = quote!(::detpath_pubsub);
    let x = quote!(#p::xcdr);
    let err = quote!(#p::wire::WireError);
    let cw = quote!(#p::wire::CdrWriter<'_, '_>);
    let cr = quote!(#p::wire::CdrReader<'_>);
    let first = &first.ident;
    let arms = e.variants.iter().map(|v| {
        let id = &v.ident;
        quote!(if v == #name::#id as i32 { return Some(#name::#id); })
    });
    Ok(quote! {
        impl #x::EnumValue for #name {
            const FIRST: Self = #name::#first;
            fn to_i32(self) -> i32 {
                self as i32
            }
            fn from_i32(v: i32) -> ::core::option::Option<Self> {
                #(#arms)*
                None
            }
        }
        impl #x::CdrEncode for #name {
            const MIN_SIZE: usize = 4;
            const KEY_SPAN: #x::Span = #x::prim_span(4);
            fn encode(&self, w: &mut #cw) -> ::core::result::Result<(), #err> {
                w.i32(<Self as #x::EnumValue>::to_i32(*self))
            }
            fn decode_into(&mut self, r: &mut #cr) -> ::core::result::Result<(), #err> {
                *self = #x::read_enum(r)?;
                Ok(())
            }
            fn clear(&mut self) {
                *self = <Self as #x::EnumValue>::FIRST;
            }
            fn skip(r: &mut #cr) -> ::core::result::Result<(), #err> {
                r.skip_prims(4, 1)
            }
            fn copy_key(r: &mut #cr, w: &mut #cw) -> ::core::result::Result<(), #err> {
                let v: Self = #x::read_enum(r)?;
                w.i32(<Self as #x::EnumValue>::to_i32(v))
            }
        }
    })
}
