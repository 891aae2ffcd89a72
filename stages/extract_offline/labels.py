"""The label vocabulary as data: which words mean title, authority, deadline, value, lot."""
# ruff: noqa: RUF001  (Cyrillic words are data here, not look-alikes)

from __future__ import annotations

import re

# Section numbering such as "II.1.1)", "1.2.", "a)", "IV.2.2)" or a bullet in front of a label.
# UK Find a Tender numbers its sections in words: "two.1.1) Title".
_WORD_NUMBERS = r"(?:one|two|three|four|five|six|seven|eight)"
_NUMBERING = (
    r"(?:(?:[IVX]+(?:\.\d+)*\)?|(?i:"
    + _WORD_NUMBERS
    + r")(?:\.\d+)+\)|\d+(?:\.\d+)*[.)]?|[a-z]\)|[•*\-])\s*)?"
)


# What separates a label from its value.
_SEP = r"\s*(?:[:|=]|-(?=\s)|\.(?=\s))?\s*"


def _anchored(label: str, *, colon: bool = False) -> re.Pattern[str]:
    """A label at the start of a line; ``colon`` demands an explicit separator after it."""
    # A separator, or nothing more on the line (the value is on the line below it).
    sep = r"(?:\s*[:|]\s*|\s+-\s+|\s*$)" if colon else r"(?:" + _SEP + r"|$)"
    # The label ends at a word's end: "Name of the contract" is not the start of "Name of the
    # contracting authority".
    end = r"(?:(?<=\W)|(?!\w))"
    return re.compile(
        r"^" + _NUMBERING + r"(?:" + label + r")" + end + sep + r"(?P<value>.*)$", re.I
    )


def _word_labels(fragments: list[str]) -> list[re.Pattern[str]]:
    """Anchored labels; a one-word label ("Title", "Objet") must be followed by a separator or
    stand alone on its line: "Project management ..." is prose, "Project: ..." is a label."""
    return [_anchored(f, colon=not re.search(r"\\s|\s", f)) for f in fragments]


_LABEL_LIKE = re.compile(r"^" + _NUMBERING + r"[^\W\d_][\w ().,/'&-]{0,60}?\s*[:|]")


_HEADING_LIKE = re.compile(
    r"^(?:Section\s+(?:[IVX\d]+|" + _WORD_NUMBERS + r")\b|"
    r"(?:[IVX]+|" + _WORD_NUMBERS + r")\.\d+(?:\.\d+)*\)|\d+(?:\.\d+)+\)?\s)",
    re.I,
)


_CONNECTOR_END = re.compile(
    r"(?:\b(?:of|for|and|the|to|in|on|at|with|a|an|&|de|la|le|les|du|des|et|à|en|d'|l'|"
    r"der|die|das|des|dem|den|und|von|am|im|zu|für)|[-,/&(])$",
    re.I,
)


# --------------------------------------------------------------------------------------------
# The vocabulary, per field and per language or family: regular-expression fragments matched
# case-insensitively at the start of a line (after any section numbering). The rules in the other
# modules are language-neutral; a new language or notice family is an entry here.
# --------------------------------------------------------------------------------------------

VOCABULARY: dict[str, dict[str, tuple[str, ...]]] = {
    "title": {
        "en": (r"title", r"subject", r"project", r"object"),
        "de": (
            r"bezeichnung\s+des\s+auftrags",
            r"auftragsbezeichnung",
            r"gegenstand\s+der\s+leistung",
            r"auftragsgegenstand",
            r"titel",
            r"bezeichnung",
        ),
        "fr": (
            r"intitul[ée]\s+du\s+march[ée]",
            r"objet\s+du\s+march[ée]",
            r"objet\s+de\s+la\s+consultation",
            r"intitul[ée]",
            r"objet",
        ),
        # Cyrillic (Russian, Ukrainian, Bulgarian): "Предмет закупки", "Наименование тендера".
        "cyrl": (
            r"предмет\s+(?:закупки|закупівлі|договора|контракта|на\s+поръчката)",
            r"наименование\s+(?:закупки|тендера|конкурса|объекта\s+закупки)",
        ),
    },
    "authority": {
        "en": (r"buyer", r"purchaser"),
        "de": (
            r"name\s+des\s+auftraggebers",
            r"(?:[öo]ffentlicher\s+)?auftraggeber",
            r"vergabestelle",
        ),
        "fr": (
            r"nom\s+complet\s+de\s+l'acheteur",
            r"nom\s+et\s+adresse\s+officiels\s+de\s+l'acheteur",
            r"pouvoir\s+adjudicateur",
            r"acheteur",
        ),
        "cyrl": (
            r"заказчик",
            r"замовник",
            r"възложител",
        ),
    },
    "reference": {
        "en": (r"internal\s+identifier", r"reference", r"RFP\s+No\.?", r"solicitation\s+no\.?"),
        "de": (r"vergabenummer", r"aktenzeichen", r"vergabe-?nr\.?", r"az\."),
        "fr": (
            r"num[ée]ro\s+de\s+r[ée]f[ée]rence",
            r"r[ée]f[ée]rence\s+du\s+march[ée]",
            r"r[ée]f[ée]rence\s+acheteur",
        ),
        "cyrl": (r"(?:номер|№)\s*(?:закупки|закупівлі|тендера|конкурса|процедуры|на\s+поръчката)",),
    },
    "deadline": {
        "en": (r"tender\s+submission\s+deadline", r"proposals?\s+due", r"bids?\s+due"),
        "de": (
            r"schlusstermin\s+f[üuiï]{1,2}r\s+den\s+eingang\s+der\s+angebote",
            r"(?:ablauf\s+der\s+)?angebotsfrist",
            r"frist\s+f[üuiï]{1,2}r\s+den\s+eingang\s+der\s+angebote",
        ),
        "fr": (
            r"date\s+limite\s+de\s+r[ée]ception\s+des\s+(?:offres|plis|candidatures)",
            r"date\s+et\s+heure\s+limites?\s+de\s+r[ée]ception\s+des\s+(?:offres|plis)",
            r"date\s+limite\s+de\s+remise\s+des\s+(?:offres|plis)",
        ),
        "cyrl": (
            r"(?:дата\s+и\s+время\s+)?окончани[ея]\s+(?:срока\s+)?(?:подачи|приема)\s+заявок",
            r"срок\s+подачи\s+(?:заявок|предложений)",
            r"кінцевий\s+строк\s+подання",
            r"срок\s+за\s+получаване\s+на\s+оферти",
        ),
    },
    # Words that make a dated line something else than the submission deadline.
    "not_deadline": {
        "en": (
            r"clarif",
            r"question",
            r"quer(?:y|ies)",
            r"enquir",
            r"inquir",
            r"site\s+visit",
            r"opening",
            r"standstill",
            r"award",
            r"validity",
            r"dispatch",
            r"publication",
            r"expression\s+of\s+interest",
            r"conference",
            r"published",
            r"additional\s+information",
            r"request(?:s|ing)?\s+(?:for\s+)?information",
        ),
        "de": (r"fragen", r"er[öo]ffnung", r"bindefrist", r"ver[öo]ffentlich", r"zuschlag"),
        "fr": (r"questions", r"validit[ée]", r"ouverture", r"envoi", r"renseignements"),
        "cyrl": (
            r"разъяснени",
            r"вскрыти",
            r"рассмотрени",
            r"подведени",
            r"срок\s+действия",
            r"опубликова",
            r"роз'?яснен",
        ),
    },
    "total_value": {
        "en": (r"total\s+value\s+\(estimated\)",),
        "de": (r"gesch[äa]tzter\s+gesamtwert", r"gesamtwert"),
        "fr": (r"valeur\s+totale\s+estim[ée]e", r"valeur\s+estim[ée]e\s+totale"),
    },
    "value": {
        "en": (r"not[\s-]+to[\s-]+exceed", r"lot\s+value", r"value\s+\(estimated\)"),
        "de": (r"gesch[äa]tzter\s+wert", r"auftragswert", r"wert\s+des\s+loses"),
        "fr": (r"montant\s+estim[ée]", r"valeur\s+estim[ée]e"),
        "cyrl": (
            r"начальная\s+\(?максимальная\)?\s+цена",
            r"ожидаемая\s+стоимость",
            r"очікувана\s+вартість",
            r"прогнозна\s+стойност",
        ),
    },
    # Identifiers of the publication, not of the procurement: never its reference.
    "not_reference": {
        "en": (
            r"notice\s+(?:id|identifier|number|no\b|ref)",
            r"publication\s+(?:id|number|no\b)",
            r"\bOCID\b",
        ),
        "de": (r"bekanntmachungs-?(?:id|nummer)", r"ver[öo]ffentlichungsnummer"),
        "fr": (r"\bavis\s+n", r"identifiant\s+de\s+l'avis"),
        "cyrl": (r"номер\s+(?:извещения|объявления|публикации)",),
    },
    # Amounts that sit beside a value but are something else: never the estimated value.
    "not_value": {
        "en": (
            r"turnover",
            r"revenue",
            r"insurance",
            r"bond",
            r"guarantee",
            r"including\s+VAT",
            r"incl\.?\s+VAT",
            r"gross",
            # Sums a tender dossier sets beside the contract's value: cover to hold, securities
            # and fees to pay, damages to owe.
            r"indemnity",
            r"liability",
            r"per\s+(?:claim|occurrence|event)",
            r"any\s+one\s+(?:claim|occurrence|event)",
            r"not\s+less\s+than",
            r"minimum\s+(?:value|amount|cover|sum|of)",
            r"(?:bid|tender|performance|security)\s+(?:security|bond|deposit)",
            r"earnest\s+money",
            r"\bEMD\b",
            r"(?:tender|bid|document|processing|application|registration)\s+fees?",
            r"penalt(?:y|ies)",
            r"liquidated\s+damages",
        ),
        "de": (
            r"umsatz",
            r"brutto",
            r"b[üu]rgschaft",
            r"sicherheitsleistung",
            r"inkl\.?\s*(?:der\s+)?(?:MwSt|USt|Mehrwertsteuer)",
            r"einschl(?:ie(?:ß|ss)lich|\.)?\s*(?:der\s+)?(?:MwSt|USt|Mehrwertsteuer)",
            r"versicherung",
            r"haftpflicht",
            r"deckungssumme",
            r"vertragsstrafe",
            r"mindest",
        ),
        "fr": (
            r"chiffre\s+d'affaires",
            r"TTC",
            r"garantie",
            r"TVA\s+comprise",
            # A framework's or a lot's ceiling ("sans minimum, montant maximum : 45 000 euros").
            r"montant\s+maximum",
            r"assurance",
            r"responsabilit[ée]\s+civile",
            r"cautionnement",
            r"p[ée]nalit[ée]s?",
            r"indemnit[ée]",
            r"frais\s+de",
        ),
        # A bid or performance security, a guarantee, an amount with VAT, a penalty.
        "cyrl": (
            r"обеспечени",
            r"забезпечен",
            r"гаранти",
            r"с\s+учетом\s+НДС",
            r"включая\s+НДС",
            r"штраф",
            r"неустойк",
        ),
    },
    # The words in front of a lot number: "Lot 2", "Los 2", "Lot: LOT-0002".
    "lot": {"en": (r"lot",), "de": (r"los",)},
    # Context that marks an e-mail address as not the contact for the tender.
    "not_contact": {
        "en": (
            r"support",
            r"helpdesk",
            r"help\s+desk",
            r"technical",
            r"no-?reply",
            r"review",
            r"notification",
            r"eSender",
            r"court",
            r"platform",
            r"portal",
            r"appeal",
            # Another party's address in a dossier: the designer's, not the buyer's.
            r"architect",
            r"engineer",
            r"consultant",
            r"designer",
            r"quantity\s+surveyor",
            r"project\s+manager",
            r"invoic",
        ),
        "de": (
            r"technische",
            r"plattform",
            r"nachpr[üu]fung",
            r"vergabekammer",
            r"architekt",
            r"planungsb[üu]ro",
            r"ingenieurb[üu]ro",
        ),
        "fr": (
            r"assistance",
            r"recours",
            r"tribunal",
            r"greffe",
            r"profil\s+d'acheteur",
            r"ordre\s+technique",
            r"ma[iî]tr(?:e|ise)\s+d'(?:oe|œ)uvre",
            r"architecte",
            r"bureau\s+d'[ée]tudes",
        ),
    },
    # Time zones named in words, resolved to the offset in force on the day.
    "zones": {
        "America/New_York": (r"eastern\s+(?:standard\s+|daylight\s+)?time", r"\bET\b"),
        "America/Chicago": (r"central\s+(?:standard\s+|daylight\s+)?time",),
        "America/Denver": (r"mountain\s+(?:standard\s+|daylight\s+)?time",),
        "America/Los_Angeles": (r"pacific\s+(?:standard\s+|daylight\s+)?time",),
        "Europe/Brussels": (r"(?:Brussels|Luxembourg|Paris|Berlin|Amsterdam|Madrid|Rome)\s+time",),
        "Europe/London": (r"(?:UK|London|British)\s+(?:local\s+)?time",),
        "Europe/Dublin": (r"(?:Irish|Dublin)\s+(?:local\s+)?time",),
    },
}


def vocabulary(field: str) -> list[str]:
    """All fragments for ``field``, languages in the order of the table."""
    return [fragment for group in VOCABULARY[field].values() for fragment in group]


def any_of(field: str) -> re.Pattern[str]:
    """One case-insensitive pattern that finds any fragment of ``field`` anywhere in a line."""
    return re.compile("|".join(f"(?:{f})" for f in vocabulary(field)), re.I)


_TITLE_LABELS = [
    _anchored(r"title\s+of\s+(?:the\s+)?(?:contract|tender|procurement|notice|project|call)"),
    _anchored(r"(?:tender|contract|procurement|procedure|project|notice|call)\s+title"),
    _anchored(r"name\s+of\s+(?:the\s+)?(?:contract|tender|project|procurement)"),
    _anchored(
        r"(?:subject|object)\s+(?:matter\s+)?of\s+(?:the\s+)?(?:contract|tender|procurement)"
    ),
    _anchored(r"(?:description\s+of\s+)?(?:contract|tender)\s+name", colon=True),
    *_word_labels(vocabulary("title")),
]


_NOTICE_HEADING = re.compile(
    r"^(?:(?:invitation|call)\s+(?:to|for)\s+(?:tenders?|bids?|quotations?)"
    r"|request\s+for\s+(?:proposals?|tenders?|quotations?)|contract\s+notice|tender\s+notice"
    r"|notice\s+of\s+(?:invitation\s+to\s+tender|tender|procurement)"
    r"|(?:RFP|RFT|RFQ|ITT))\b(?P<rest>.*)$",
    re.I,
)


_AUTHORITY_LABELS = [
    _anchored(r"official\s+name"),
    _anchored(r"name\s+and\s+addresse?s?"),
    _anchored(
        r"(?:name\s+of\s+(?:the\s+)?)?(?:contracting|awarding|procuring|purchasing|issuing|"
        r"tendering)\s+(?:authority|entity|body|agency|organi[sz]ation)(?:\s+name)?"
    ),
    _anchored(r"(?:issued|published)\s+by"),
    _anchored(r"(?:buyer|purchaser|procuring\s+entity|employer|client|authority)", colon=True),
    _anchored(r"(?:organi[sz]ation|agency|institution)(?:\s+name)?", colon=True),
    *_word_labels(vocabulary("authority")),
]


_AUTHORITY_WORDS = re.compile(
    r"\b(?:ministry|council|authority|agency|department|municipality|city\s+of|county|"
    r"university|hospital|NHS|trust|government|commission|office|board|institute|region|"
    r"district|borough|service|directorate|administration|town\s+of|village\s+of|"
    r"stadt|gemeinde|landkreis|commune|d[ée]partement|m[ée]tropole|syndicat|"
    r"communaut[ée]|conseil|mairie|ville\s+de|centre\s+hospitalier|minist[eè]re|ministerium|"
    r"landratsamt|kreis|verband|housing\s+association|college|police|fire\s+and\s+rescue"
    # Spanish, Italian, Dutch, Polish, Portuguese bodies.
    r"|ayuntamiento|diputaci[óo]n|consejer[íi]a|ministerio|universidad|comune|provincia|regione"
    r"|ministero|azienda\s+sanitaria|universit[àa]|gemeente|provincie|ministerie|waterschap"
    r"|universiteit|gmina|powiat|wojew[óo]dztwo|urz[ąa]d|ministerstwo|uniwersytet|munic[íi]pio"
    r"|c[âa]mara\s+municipal|minist[ée]rio|universidade"
    # Cyrillic: ministries, administrations, akimats, committees, universities, hospitals.
    r"|министерств[оа]|міністерств[оа]|администраци[яи]|адміністраці[яї]|акимат|комитет"
    r"|университет|університет|больниц[аы]|лікарн[яі]|община)\b",
    re.I,
)


_REF_LABELS = [
    _anchored(
        r"(?:(?:tender|contract|procurement|notice|project|file|our|internal|bid|solicitation|"
        r"ITT|RFP|RFQ|RFT|document|dossier)\s+)?(?:ref(?:erence)?\.?|ref)\s*"
        r"(?:no\.?|number|num\.?|nr\.?|#|id|code)"
    ),
    _anchored(
        r"(?:tender|contract|procurement|project|file|our|internal|bid|solicitation|"
        r"ITT|RFP|RFQ|RFT|document|dossier)\s+ref(?:erence)?\.?"
    ),
    _anchored(r"(?:notice\s+)?ref(?:erence)?\.?", colon=True),
    _anchored(
        r"(?:tender|contract|procurement|solicitation|bid|ITT|RFP|RFQ|RFT|file|"
        r"identification)\s*(?:no\.?|number|nr\.?|#|id)"
    ),
    *(_anchored(f) for f in vocabulary("reference")),
]


_INLINE_REF = re.compile(
    r"\b(?:ref(?:erence)?\.?(?:\s*(?:no\.?|number))?\s*[:#]|ref\.\s)\s*(?P<value>\S.*)$", re.I
)


_TED_NUMBER = re.compile(r"\b\d{4}/S\s?\d{3}-\d{6}\b")


# Capitals of the Latin and Cyrillic scripts, digits and the marks inside identifiers.
_REF_TOKEN = re.compile(r"^[A-Z0-9À-ÖØ-ÞА-ЯЁІЇЄҐ][A-Z0-9À-ÖØ-ÞА-ЯЁІЇЄҐ/._\-]*$")


_DEADLINE_SPECIFIC = [
    re.compile(
        r"time[\s-]*limits?\s+for\s+(?:the\s+)?receipt\s+of\s+(?:tenders|bids|offers|"
        r"applications|requests|proposals)",
        re.I,
    ),
    re.compile(
        r"deadline\s+for\s+(?:the\s+)?(?:receipt|submission|submitting|lodg\w*|return)"
        r"(?:\s+of\s+(?:tenders|bids|offers|proposals|applications|responses|requests))?",
        re.I,
    ),
    re.compile(
        r"(?:tenders?|bids?|offers?|proposals?)\s+(?:submission\s+|return\s+)?deadline", re.I
    ),
    re.compile(r"submission\s+(?:deadline|closing\s+date|due\s+date)", re.I),
    re.compile(r"(?:closing|close|return|due)\s+date(?:\s+(?:and|&)\s+time)?", re.I),
    re.compile(r"closing\s+time", re.I),
    re.compile(
        r"(?:tenders|bids|offers|proposals|responses|applications)\s+(?:must|shall|should|will|are\s+to)"
        r"\s+be\s+(?:submitted|received|delivered|uploaded|lodged|returned)",
        re.I,
    ),
    re.compile(r"latest\s+(?:date|time)\s+for\s+(?:the\s+)?(?:receipt|submission)", re.I),
    # "Tender submission by - 22/12/2023", "Submission of bids before ...", "Bid submission up
    # to": the act and the word that bounds it, also where a text layer lost the space
    # ("TENDERSUBMISSION BY").
    re.compile(
        r"(?:(?:tenders?|bids?|offers?|proposals?|quotations?)\s*submission"
        r"|submission\s+of\s+(?:the\s+)?(?:tenders?|bids?|offers?|proposals?|quotations?))"
        r"\s+(?:by|before|up\s*to|not\s+later\s+than)\b",
        re.I,
    ),
    *(re.compile(f, re.I) for f in vocabulary("deadline")),
]


_DEADLINE_GENERIC = re.compile(r"\bdeadline\b", re.I)


_DEADLINE_EXCLUDE = any_of("not_deadline")


_DEADLINE_STOP = re.compile(
    r"opening|dispatch|publication|clarif|question|enquir|validity|conference|"
    r"er[öo]ffnung|bindefrist|fragen|ouverture|validit",
    re.I,
)


_TOTAL_VALUE_LABELS = re.compile(
    r"estimated\s+total\s+(?:contract\s+)?value|total\s+estimated\s+(?:contract\s+)?(?:value|budget|amount)"
    r"|total\s+(?:contract\s+)?value|total\s+(?:estimated\s+)?budget|overall\s+(?:estimated\s+)?"
    r"(?:value|budget)|estimated\s+(?:overall|aggregate)\s+value|total\s+amount|"
    + "|".join(vocabulary("total_value")),
    re.I,
)


_VALUE_LABELS = re.compile(
    r"estimated\s+(?:contract\s+|procurement\s+|tender\s+)?(?:value|budget|amount|cost|price)"
    r"|contract\s+value|value\s+excluding\s+VAT|value\s+\(?excl|(?:indicative|approximate|maximum|"
    r"anticipated|expected|available)\s+(?:contract\s+)?(?:value|budget)|\bbudget\b"
    r"|value\s+of\s+(?:the\s+)?(?:contract|framework|procurement)|\bvalue\s*[:|]|"
    + "|".join(vocabulary("value")),
    re.I,
)
_NOT_VALUE = any_of("not_value")
# Whole words only: "court" is not in "Rivecourt".
_NOT_CONTACT = re.compile(r"\b(?:" + any_of("not_contact").pattern + r")", re.I)
_NOT_REFERENCE = any_of("not_reference")


_LOT_MENTION = re.compile(
    r"\blot\s*(?:no\.?|number|n[o°]\.?|#)?\s*\d|\b(?:of\s+the|per|this|each|the)\s+lot\b", re.I
)


_LOT_HEADER = re.compile(
    r"^" + _NUMBERING + r"(?:lot|los)\s*(?:no\.?|number|nr\.?|n[o°]\.?|#)?\s*[:.-]?\s*"
    r"(?:LOT-0*)?(?P<num>\d{1,2}|['`]?[lIi|!\]t](?=\s*:))"
    r"(?:\s*(?:[:.)|]|\s-\s?|-\s)\s*(?P<rest>.*)|\s*$"
    # "Los 1 (Straßenbau)": the title in brackets, closing the line.
    r"|\s+\((?P<bracketed>[^()\d]{3,120})\)\s*$)",
    re.I,
)


_LOT_HEADER_NO_NUMBER = re.compile(r"^" + _NUMBERING + r"lot\s*:\s*(?P<rest>[A-Za-z].{3,})$", re.I)


_INLINE_LOT_NO = re.compile(r"\s*\blot\s*(?:no\.?|number|nr\.?)\s*:?\s*(?P<num>\d{1,2})\s*$", re.I)


# "Lot | Title | Estimated value": a header row (no lot number, no amount on it).
_LOT_TABLE_HEADER = re.compile(
    r"^(?:(?:lot|los)(?:\s*(?:no\.?|number|#))?\b|(?:n[°o]\.?|nr\.?|#)(?=.*\b(?:lot|los)\b))"
    r"(?![\s.:#-]*\d)(?!.*\d{3})"
    r".*\b(?:title|description|name|subject|value|intitul[ée]|d[ée]signation|montant|bezeichnung)\b",
    re.I,
)


_LOT_TABLE_ROW = re.compile(r"^[\W_]*(?:(?P<num>\d{1,2})(?![\d,.]\d)[\W_]*)?(?P<rest>[^\W\d_].*)$")


_LOT_BLOCK_END = re.compile(
    r"^\W*(?:Section\b|(?:III|IV|V|VI)\.\d|total\b)|" + _TOTAL_VALUE_LABELS.pattern,
    re.I,
)


_TITLE_TAIL = re.compile(
    r"(?:\s*[-,;:(\[|]\s*)?(?:\s*(?:total\s+)?(?:estimated|est\.|approx\.?|approximate|indicative|gesch[äa]tzter|"
    r"maximum|max\.)?\s*(?:contract\s+)?(?:value|budget|amount|cost|worth|wert)?"
    r"(?:\s*\(?\s*(?:excl\.?|excluding|ex\.?|net\s+of)\s*VAT\s*\)?)?\s*(?:of|at|:|=)?\s*)$",
    re.I,
)


_LOT_TITLE_LINE = re.compile(r"^" + _NUMBERING + r"(?:lot\s+)?title\s*[:|]\s*(?P<value>.+)$", re.I)


# A postal address line: a house number and a street word ("9 Market Street", "Hauptstraße 12",
# "51 avenue de la République"). Never a title or an authority's name.
_STREET_WORDS = (
    r"street|st\.|road|rd\.|avenue|lane|drive|boulevard|way|square|place|close|court|row|parkway"
    r"|stra(?:ß|ss|b)e|str\.|platz|weg|allee|gasse|ring|damm|ufer"
    r"|rue|av\.|all[ée]e|chemin|quai|impasse|cours|route"
)
_ADDRESS_LINE = re.compile(
    r"^\d{1,4}[a-z]?,?\s+(?:[\w'.-]+\s+){0,4}?(?:" + _STREET_WORDS + r")\b"
    r"|^\d{1,4}[a-z]?,?\s+[\w'.-]*(?:stra(?:ß|ss)e|platz|weg|allee|gasse)\b"
    r"|^[\w'.-]*(?:stra(?:ß|ss)e|platz|weg|allee|gasse)\s+\d{1,4}[a-z]?\b",
    re.I,
)
