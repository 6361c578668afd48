"""Street suffixes: the USPS list (Publication 28, appendix C1 "Street Suffix
Abbreviations") plus the UK/Irish street types the address recognizer knows.

Each primary name maps to the forms written for it: the USPS "commonly used" variants
and the standard abbreviation (the primary itself, its plural when USPS folds one into
the other, misspellings USPS lists such as "Avenu"). Words are kept in title case; the
recognizer decides which case variants it accepts.

``STRONG`` primaries are street types that are rarely anything else after a house number
and a capitalized word ("12 Oak Street"); every other suffix is an ordinary English word
too ("12 Key Points", "3 Main Points"), so it needs more evidence than its shape.
"""

from __future__ import annotations

USPS_SUFFIXES: dict[str, tuple[str, ...]] = {
    "Alley": ("Allee", "Ally", "Aly"),
    "Anex": ("Annex", "Annx", "Anx"),
    "Arcade": ("Arc",),
    "Avenue": ("Av", "Ave", "Aven", "Avenu", "Avn", "Avnue"),
    "Bayou": ("Bayoo", "Byu"),
    "Beach": ("Bch",),
    "Bend": ("Bnd",),
    "Bluff": ("Blf", "Bluf"),
    "Bluffs": ("Blfs",),
    "Bottom": ("Bot", "Btm", "Bottm"),
    "Boulevard": ("Blvd", "Boul", "Boulv"),
    "Branch": ("Br", "Brnch"),
    "Bridge": ("Brdge", "Brg"),
    "Brook": ("Brk",),
    "Brooks": ("Brks",),
    "Burg": ("Bg",),
    "Burgs": ("Bgs",),
    "Bypass": ("Byp", "Bypa", "Bypas", "Byps"),
    "Camp": ("Cp", "Cmp"),
    "Canyon": ("Canyn", "Cnyn", "Cyn"),
    "Cape": ("Cpe",),
    "Causeway": ("Causwa", "Cswy"),
    "Center": ("Cen", "Cent", "Centr", "Centre", "Cnter", "Cntr", "Ctr"),
    "Centers": ("Ctrs",),
    "Circle": ("Cir", "Circ", "Circl", "Crcl", "Crcle"),
    "Circles": ("Cirs",),
    "Cliff": ("Clf",),
    "Cliffs": ("Clfs",),
    "Club": ("Clb",),
    "Common": ("Cmn",),
    "Commons": ("Cmns",),
    "Corner": ("Cor",),
    "Corners": ("Cors",),
    "Course": ("Crse",),
    "Court": ("Ct",),
    "Courts": ("Cts",),
    "Cove": ("Cv",),
    "Coves": ("Cvs",),
    "Creek": ("Crk",),
    "Crescent": ("Cres", "Crsent", "Crsnt"),
    "Crest": ("Crst",),
    "Crossing": ("Crssng", "Xing"),
    "Crossroad": ("Xrd",),
    "Crossroads": ("Xrds",),
    "Curve": ("Curv",),
    "Dale": ("Dl",),
    "Dam": ("Dm",),
    "Divide": ("Div", "Dv", "Dvd"),
    "Drive": ("Dr", "Driv", "Drv"),
    "Drives": ("Drs",),
    "Estate": ("Est",),
    "Estates": ("Ests",),
    "Expressway": ("Exp", "Expr", "Express", "Expw", "Expy"),
    "Extension": ("Ext", "Extn", "Extnsn"),
    "Extensions": ("Exts",),
    "Fall": (),
    "Falls": ("Fls",),
    "Ferry": ("Frry", "Fry"),
    "Field": ("Fld",),
    "Fields": ("Flds",),
    "Flat": ("Flt",),
    "Flats": ("Flts",),
    "Ford": ("Frd",),
    "Fords": ("Frds",),
    "Forest": ("Forests", "Frst"),
    "Forge": ("Forg", "Frg"),
    "Forges": ("Frgs",),
    "Fork": ("Frk",),
    "Forks": ("Frks",),
    "Fort": ("Frt", "Ft"),
    "Freeway": ("Freewy", "Frway", "Frwy", "Fwy"),
    "Garden": ("Gardn", "Grden", "Grdn", "Gdn"),
    "Gardens": ("Gdns", "Grdns"),
    "Gateway": ("Gatewy", "Gatway", "Gtway", "Gtwy"),
    "Glen": ("Gln",),
    "Glens": ("Glns",),
    "Green": ("Grn",),
    "Greens": ("Grns",),
    "Grove": ("Grov", "Grv"),
    "Groves": ("Grvs",),
    "Harbor": ("Harb", "Harbr", "Hbr", "Hrbor", "Harbour"),
    "Harbors": ("Hbrs", "Harbours"),
    "Haven": ("Hvn",),
    "Heights": ("Ht", "Hts"),
    "Highway": ("Highwy", "Hiway", "Hiwy", "Hway", "Hwy"),
    "Hill": ("Hl",),
    "Hills": ("Hls",),
    "Hollow": ("Hllw", "Hollows", "Holw", "Holws"),
    "Inlet": ("Inlt",),
    "Island": ("Is", "Islnd"),
    "Islands": ("Islnds", "Iss"),
    "Isle": ("Isles",),
    "Junction": ("Jct", "Jction", "Jctn", "Junctn", "Juncton"),
    "Junctions": ("Jctns", "Jcts"),
    "Key": ("Ky",),
    "Keys": ("Kys",),
    "Knoll": ("Knl", "Knol"),
    "Knolls": ("Knls",),
    "Lake": ("Lk",),
    "Lakes": ("Lks",),
    "Land": (),
    "Landing": ("Lndg", "Lndng"),
    "Lane": ("Ln",),
    "Light": ("Lgt",),
    "Lights": ("Lgts",),
    "Loaf": ("Lf",),
    "Lock": ("Lck",),
    "Locks": ("Lcks",),
    "Lodge": ("Ldg", "Ldge", "Lodg"),
    "Loop": ("Loops",),
    "Mall": (),
    "Manor": ("Mnr",),
    "Manors": ("Mnrs",),
    "Meadow": ("Mdw",),
    "Meadows": ("Mdws", "Medows"),
    "Mews": (),
    "Mill": ("Ml",),
    "Mills": ("Mls",),
    "Mission": ("Missn", "Mssn", "Msn"),
    "Motorway": ("Mtwy",),
    "Mount": ("Mnt", "Mt"),
    "Mountain": ("Mntain", "Mntn", "Mountin", "Mtin", "Mtn"),
    "Mountains": ("Mntns", "Mtns"),
    "Neck": ("Nck",),
    "Orchard": ("Orch", "Orchrd"),
    "Oval": ("Ovl",),
    "Overpass": ("Opas",),
    "Park": ("Prk",),
    "Parks": (),
    "Parkway": ("Parkwy", "Pkway", "Pkwy", "Pky"),
    "Parkways": ("Pkwys",),
    "Pass": (),
    "Passage": ("Psge",),
    "Path": ("Paths",),
    "Pike": ("Pikes",),
    "Pine": ("Pne",),
    "Pines": ("Pnes",),
    "Place": ("Pl",),
    "Plain": ("Pln",),
    "Plains": ("Plns",),
    "Plaza": ("Plz", "Plza"),
    "Point": ("Pt",),
    "Points": ("Pts",),
    "Port": ("Prt",),
    "Ports": ("Prts",),
    "Prairie": ("Pr", "Prr"),
    "Radial": ("Rad", "Radiel", "Radl"),
    "Ramp": (),
    "Ranch": ("Ranches", "Rnch", "Rnchs"),
    "Rapid": ("Rpd",),
    "Rapids": ("Rpds",),
    "Rest": ("Rst",),
    "Ridge": ("Rdg", "Rdge"),
    "Ridges": ("Rdgs",),
    "River": ("Riv", "Rvr", "Rivr"),
    "Road": ("Rd",),
    "Roads": ("Rds",),
    "Route": ("Rte",),
    "Row": (),
    "Rue": (),
    "Run": (),
    "Shoal": ("Shl",),
    "Shoals": ("Shls",),
    "Shore": ("Shoar", "Shr"),
    "Shores": ("Shoars", "Shrs"),
    "Skyway": ("Skwy",),
    "Spring": ("Spg", "Spng", "Sprng"),
    "Springs": ("Spgs", "Spngs", "Sprngs"),
    "Spur": (),
    "Spurs": (),
    "Square": ("Sq", "Sqr", "Sqre", "Squ"),
    "Squares": ("Sqrs", "Sqs"),
    "Station": ("Sta", "Statn", "Stn"),
    "Stravenue": ("Stra", "Strav", "Straven", "Stravn", "Strvn", "Strvnue"),
    "Stream": ("Streme", "Strm"),
    "Street": ("St", "Strt", "Str"),
    "Streets": ("Sts",),
    "Summit": ("Smt", "Sumit", "Sumitt"),
    "Terrace": ("Ter", "Terr"),
    "Throughway": ("Trwy",),
    "Trace": ("Traces", "Trce"),
    "Track": ("Tracks", "Trak", "Trk", "Trks"),
    "Trafficway": ("Trfy",),
    "Trail": ("Trails", "Trl", "Trls"),
    "Trailer": ("Trlr", "Trlrs"),
    "Tunnel": ("Tunel", "Tunl", "Tunls", "Tunnels", "Tunnl"),
    "Turnpike": ("Trnpk", "Turnpk", "Tpke"),
    "Underpass": ("Upas",),
    "Union": ("Un",),
    "Unions": ("Uns",),
    "Valley": ("Vally", "Vlly", "Vly"),
    "Valleys": ("Vlys",),
    "Viaduct": ("Vdct", "Via", "Viadct"),
    "View": ("Vw",),
    "Views": ("Vws",),
    "Village": ("Vill", "Villag", "Villg", "Villiage", "Vlg"),
    "Villages": ("Vlgs",),
    "Ville": ("Vl",),
    "Vista": ("Vis", "Vist", "Vst", "Vsta"),
    "Walk": (),
    "Walks": (),
    "Wall": (),
    "Way": ("Wy",),
    "Ways": (),
    "Well": ("Wl",),
    "Wells": ("Wls",),
}

#: UK and Irish street types outside the USPS list (most UK types, such as Close, Mews,
#: Crescent or Gardens, are on it).
UK_SUFFIXES: dict[str, tuple[str, ...]] = {
    "Close": (),
    "Wynd": (),
    "Rise": (),
    "Vale": (),
    "Parade": ("Pde",),
    "Quay": (),
    "Embankment": (),
    "Promenade": ("Prom",),
}

#: Street types that count on their shape alone (see the module docstring).
STRONG = frozenset((
    "Street Avenue Road Boulevard Lane Drive Court Terrace Parkway Highway Crescent Close "
    "Mews Alley Expressway Freeway Turnpike Stravenue Place Square Circle Way Plaza "
    "Causeway Bypass Motorway Throughway Trafficway Skyway Row Gardens Grove Walk Wynd "
    "Embankment"
).split())

#: Abbreviations that are common words or tokens in mixed case ("Is", "Un", "Exp"):
#: accepted in capitals only ("IS", "UN").
CAPITALS_ONLY = frozenset({"Is", "Un", "Exp", "Express", "Est", "Ext", "Pr", "Cent", "Div",
                           "Rad", "Arc", "Bot", "Cen", "Sta", "Vis", "Hl", "Ml"})

#: Variants that are whole words, not abbreviations: they never take a period.
_WHOLE_WORDS = frozenset({"Annex", "Centre", "Express", "Forests", "Hollows", "Isles", "Loops",
                          "Paths", "Pikes", "Ranches", "Traces", "Tracks", "Trails",
                          "Tunnels", "Harbour", "Harbours", "Allee"})


def forms(primary: str) -> tuple[str, ...]:
    """The primary name and every form written for it."""
    table = USPS_SUFFIXES if primary in USPS_SUFFIXES else UK_SUFFIXES
    return (primary, *table[primary])


def is_abbreviation(form: str) -> bool:
    """Whether ``form`` is an abbreviation (so "St." keeps its period, "Street." does not)."""
    return form not in USPS_SUFFIXES and form not in UK_SUFFIXES and form not in _WHOLE_WORDS


def split_by_strength() -> tuple[list[str], list[str]]:
    """(strong forms, weak forms) over both tables; a form listed under a strong and a
    weak primary ("Via") is weak."""
    strong: set[str] = set()
    weak: set[str] = set()
    for primary in (*USPS_SUFFIXES, *UK_SUFFIXES):
        (strong if primary in STRONG else weak).update(forms(primary))
    return sorted(strong - weak), sorted(weak)
