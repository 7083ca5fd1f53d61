"""English plurals of kinds, as kubebuilder names a CRD's resource (``flect.Pluralize``).

kubebuilder and operator-sdk take a kind's plural from gobuffalo/flect applied to the lowercased
kind, so ``Policy`` is served as ``policies``, ``Ingress`` as ``ingresses`` and ``Redis`` (already
ending in s) as ``redis``. A CRD, its RBAC rules and every client name the resource by that
plural, so it is reproduced here, quirks included, rather than improved. The order of lookups is
flect's: whole irregular words, words that already are plurals, suffix rules (irregular words
also act as suffixes, the later in the table first), then "ends in s: keep", else add "s".
Acronym handling (flect splits ``API`` into its own word) is left out: a kind is lowercased first.
"""

from __future__ import annotations

# Irregular words. `_EXACT` ones match only as the whole word; the others, (singular, plural,
# alternative plural or "") with uncountables as their own plural, also as the end of a compound
# (`batman` → `batmen`), in this order.
_EXACT = {"ox": "oxen", "louse": "lice", "die": "dice", "axis": "axes", "alias": "aliases",
          "use": "uses", "toe": "toes"}  # fmt: skip
_IRREGULAR: tuple[tuple[str, str, str], ...] = (
    ("aircraft", "aircraft", ""), ("beef", "beef", "beefs"), ("bison", "bison", ""),
    ("blues", "blues", ""),
    ("chassis", "chassis", ""), ("deer", "deer", ""), ("fish", "fish", "fishes"),
    ("moose", "moose", ""), ("police", "police", ""), ("salmon", "salmon", "salmons"),
    ("series", "series", ""), ("sheep", "sheep", ""), ("shrimp", "shrimp", "shrimps"),
    ("species", "species", ""), ("swine", "swine", "swines"), ("trout", "trout", "trouts"),
    ("tuna", "tuna", "tunas"), ("you", "you", ""), ("child", "children", ""),
    ("foot", "feet", ""), ("goose", "geese", ""), ("man", "men", ""), ("human", "humans", ""),
    ("mouse", "mice", ""), ("tooth", "teeth", ""), ("woman", "women", ""),
    ("person", "people", ""), ("adieu", "adieux", "adieus"), ("fabliau", "fabliaux", ""),
    ("bureau", "bureaus", "bureaux"), ("criterion", "criteria", ""),
    ("ganglion", "ganglia", "ganglions"), ("lexicon", "lexica", "lexicons"),
    ("mitochondrion", "mitochondria", "mitochondrions"), ("noumenon", "noumena", ""),
    ("phenomenon", "phenomena", ""), ("taxon", "taxa", ""), ("media", "media", ""),
    ("medium", "media", "mediums"), ("stadium", "stadiums", "stadia"),
    ("aquarium", "aquaria", "aquariums"), ("auditorium", "auditoria", "auditoriums"),
    ("symposium", "symposia", "symposiums"), ("curriculum", "curriculums", "curricula"),
    ("quota", "quotas", ""), ("alumnus", "alumni", "alumnuses"), ("bacillus", "bacilli", ""),
    ("cactus", "cacti", "cactuses"), ("coccus", "cocci", ""), ("focus", "foci", "focuses"),
    ("locus", "loci", "locuses"), ("nucleus", "nuclei", "nucleuses"),
    ("octopus", "octupuses", "octopi"), ("radius", "radii", "radiuses"),
    ("syllabus", "syllabi", ""), ("corpus", "corpora", "corpuses"), ("genus", "genera", ""),
    ("alumna", "alumnae", ""), ("vertebra", "vertebrae", ""),
    ("differentia", "differentiae", ""), ("minutia", "minutiae", ""), ("vita", "vitae", ""),
    ("larva", "larvae", ""), ("postcava", "postcavae", ""), ("praecava", "praecavae", ""),
    ("uva", "uvae", ""), ("apex", "apices", "apexes"), ("codex", "codices", "codexes"),
    ("index", "indices", "indexes"), ("latex", "latices", "latexes"),
    ("vertex", "vertices", "vertexes"), ("vortex", "vortices", "vortexes"),
    ("appendix", "appendices", "appendixes"), ("radix", "radices", "radixes"),
    ("helix", "helices", "helixes"), ("crisis", "crises", ""), ("ellipsis", "ellipses", ""),
    ("genesis", "geneses", ""), ("oasis", "oases", ""), ("thesis", "theses", ""),
    ("testis", "testes", ""), ("base", "bases", ""), ("basis", "bases", ""),
    ("vedalia", "vedalias", ""), ("abuse", "abuses", ""), ("cause", "causes", ""),
    ("clause", "clauses", ""), ("cruse", "cruses", ""), ("excuse", "excuses", ""),
    ("fuse", "fuses", ""), ("house", "houses", ""), ("misuse", "misuses", ""),
    ("muse", "muses", ""), ("pause", "pauses", ""), ("ache", "aches", ""),
    ("topaz", "topazes", ""), ("buffalo", "buffaloes", "buffalos"), ("potato", "potatoes", ""),
    ("tomato", "tomatoes", ""), ("equipment", "equipment", ""),
    ("information", "information", ""), ("jeans", "jeans", ""), ("money", "money", ""),
    ("news", "news", ""), ("rice", "rice", ""), ("dwarf", "dwarfs", "dwarves"),
    ("hoof", "hoofs", "hooves"),
    ("thief", "thieves", ""), ("chive", "chives", ""), ("hive", "hives", ""),
    ("move", "moves", ""), ("movie", "movies", ""), ("cookie", "cookies", ""),
    ("pretorium", "pretoriums", ""), ("agenda", "agendas", ""),
    ("formula", "formulas", "formulae"), ("shoe", "shoes", ""), ("graffiti", "graffiti", ""),
)  # fmt: skip
# Plurals that are not read back as singulars ("media" of medium, "bases" of basis, ...): these
# words still pluralize as their own entry, but their plural is no marker of an existing plural.
_ONE_WAY = frozenset({"blues", "medium", "ellipsis", "basis"})

# Suffix rules in priority order: (singular suffix, plural suffix).
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("tive", "tives"), ("eaf", "eaves"), ("oaf", "oaves"), ("afe", "aves"), ("arf", "arves"),
    ("rfe", "rves"), ("rf", "rves"), ("lf", "lves"), ("fe", "ves"),
    ("ay", "ays"), ("ey", "eys"), ("oy", "oys"), ("quy", "quies"), ("uy", "uys"), ("y", "ies"),
    ("eau", "eaux"),
    ("bula", "bulae"), ("dula", "bulae"), ("lula", "bulae"), ("nula", "bulae"), ("vula", "bulae"),
    ("hedron", "hedra"),
    ("ium", "ia"), ("seum", "seums"), ("eum", "ea"), ("oum", "oa"), ("stracum", "straca"),
    ("dum", "da"), ("elum", "ela"), ("ilum", "ila"), ("olum", "ola"), ("ulum", "ula"),
    ("llum", "lla"), ("ylum", "yla"), ("imum", "ima"), ("ernum", "erna"), ("gnum", "gna"),
    ("brum", "bra"), ("crum", "cra"), ("terum", "tera"), ("serum", "sera"), ("trum", "tra"),
    ("antum", "anta"), ("atum", "ata"), ("entum", "enta"), ("etum", "eta"), ("itum", "ita"),
    ("otum", "ota"), ("utum", "uta"), ("ctum", "cta"), ("ovum", "ova"),
    ("trix", "trices"),
    ("iasis", "iases"), ("mesis", "meses"), ("kinesis", "kineses"), ("resis", "reses"),
    ("gnosis", "gnoses"), ("opsis", "opses"), ("ysis", "yses"),
    ("ouse", "ouses"), ("lause", "lauses"), ("us", "uses"),
    ("ch", "ches"), ("io", "ios"), ("sh", "shes"), ("ss", "sses"), ("ez", "ezzes"),
    ("iz", "izzes"), ("tz", "tzes"), ("zz", "zzes"), ("ano", "anos"), ("lo", "los"),
    ("to", "tos"), ("oo", "oos"), ("o", "oes"), ("x", "xes"),
)  # fmt: skip


def _tables() -> tuple[dict[str, str], set[str], list[tuple[str, str | None]]]:
    whole = dict(_EXACT)
    already_plural = set(_EXACT.values())
    for singular, plural, alternative in _IRREGULAR:
        whole[singular] = plural
        if singular not in _ONE_WAY:
            already_plural.add(plural)
            if alternative:
                already_plural.add(alternative)
    # Each rule comes after a "keep" rule for its plural suffix (None: the word is a plural).
    rules: list[tuple[str, str | None]] = []
    for singular, plural, _ in reversed(_IRREGULAR):
        rules += [(plural, None), (singular, plural)]
    for singular, plural in _SUFFIXES:
        rules += [(plural, None), (singular, plural)]
    return whole, already_plural, rules


_WHOLE, _ALREADY_PLURAL, _RULES = _tables()


def pluralize(kind: str) -> str:
    """The resource plural kubebuilder gives a kind: `Policy` → `policies`."""
    word = kind.lower()
    if not word:
        return word
    if word in _WHOLE:
        return _WHOLE[word]
    if word in _ALREADY_PLURAL:
        return word
    for suffix, replacement in _RULES:
        if word.endswith(suffix):
            return word if replacement is None else word[: -len(suffix)] + replacement
    return word if word.endswith("s") else word + "s"
