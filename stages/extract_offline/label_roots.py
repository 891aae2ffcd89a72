"""Label concepts as data: the word roots that make a label mean a field, per language.

The phrase patterns in ``labels`` name the labels the rules were written against. Publishers
print many more: "Ausschreibungsnummer", "Leistungsbezeichnung", "Date limite de dépôt des offres",
"Return date for tenders". What such labels share is a few roots: a German compound holds the
noun that says what it is ("...nummer", "...bezeichnung", "...frist"), a French or English label
combines a head word with the thing it is about ("date limite" + "offres", "receipt" + "bids").

Each field has, per language, patterns of root groups. A pattern matches a label when each of
its groups matches one of the label's words (accents folded, lower case); a group is roots
separated by ``|``; a root matches a word that starts with it, or, written ``*root``, a word
that contains it (a part of a German compound), or, written ``=root``, only that word. One word
may satisfy two groups ("angebotsfrist").
A field's blockers are roots that make a label something else even when a pattern matches:
"Nachprüfungsbehörde" is no buyer, "Bruttoauftragswert" no net value, "Bieterfragen bis" no
submission deadline. A label that matches two fields means neither (see ``concepts``).
"""
# ruff: noqa: RUF001  (Cyrillic words are data here, not look-alikes)

from __future__ import annotations

Roots = dict[str, dict[str, tuple[str, ...]]]

PATTERNS: Roots = {
    "title": {
        "en": (
            "title",
            "=name contract|tender|project|procurement|requirement|scheme|bid|solicitation",
            "subject|object contract|procurement|tender|matter|purchase",
        ),
        "de": (
            "*bezeichnung",
            "*titel",
            "*gegenstand",
            "name vorhaben|projekt|auftrag|ausschreibung|*massnahme|verfahren",
            "=vorhaben",
            "=projekt",
        ),
        "fr": (
            "titre",
            "intitul",
            "libelle",
            "objet",
            "designation",
            "=sujet",
            "nom marche|consultation|projet|procedure|contrat|operation",
        ),
        # Cyrillic: Russian, Ukrainian, Bulgarian, Serbian ("Предмет закупки", "Наименование
        # тендера", "Предмет закупівлі", "Предмет на поръчката", "Предмет јавне набавке").
        "cyrl": (
            "наименовани|назва|предмет|обект|объект закуп|тендер|конкурс|аукцион|поръчк|набавк"
            "|договор|контракт",
        ),
    },
    "authority": {
        "en": (
            "contracting|awarding|procuring|purchasing|buying|issuing|tendering|commissioning"
            " authorit|entit|body|agenc|organi",
            "buyer",
            "purchaser",
            "authorit",
            "organi name",
            "issued by",
            "employer",
        ),
        "de": (
            "*auftraggeb",
            "*vergabestelle",
            "stelle|=amt|behorde ausschreib|vergeb|auffordernd|beschaff|zuschlag",
            "*beschaffungsstelle",
        ),
        "fr": (
            "acheteu",
            "adjudicat",
            "maitre ouvrage",
            "autorite contractant|adjudicat",
            "organisme",
        ),
        # "Заказчик", "Замовник", "Възложител", "Наручилац". Not the organiser ("Организатор
        # закупок"): an agent or a central purchasing body may organise for the buyer.
        "cyrl": ("заказчик", "замовник", "възложител", "наручилац"),
    },
    "reference": {
        "en": (
            "reference|=ref",
            "number|=no|=nr|=id|identifier|code contract|tender|procurement|file|bid|solicitation"
            "|itt|rfp|rfq|rft|procedure|project|dossier|requisition",
        ),
        "de": (
            "*zeichen",
            "*nummer",
            "=nr",
            "*referenz",
            "*kennung",
            "*kennziffer",
            "=id|identifikation vergabe|verfahren|ausschreibung|auftrag",
        ),
        "fr": (
            "reference|=ref",
            "numero|=n|=no|identifiant marche|consultation|procedure|dossier",
            "numero",
        ),
        # "Номер закупки", "№ тендера" ("№" folds to "no"), "Номер на поръчката".
        "cyrl": ("номер|=no|реестров закуп|тендер|конкурс|аукцион|процедур|поръчк|набавк",),
    },
    "deadline": {
        "en": (
            "deadline|closing|limit tender|bid|offer|proposal|response|submission|submitting"
            "|receipt|return|application|quotation",
            "closing date|time",
            "submission|submitted|submit deadline|date|due|later|until|before|time|closing",
            "receipt|received|return|returned|due|delivered|lodged|uploaded|reach"
            " tender|bid|offer|proposal|response|quotation|submission",
            "due date",
        ),
        "de": (
            "angebot|teilnahmeantr *frist|*termin|*abgabe|*eingang|einreich|einzureich|*schluss",
            "*einreichung",
            "schlusstermin",
            "abgabe *frist|*termin",
        ),
        "fr": (
            "limite|remise|depot|reception|parvenir|cloture offre|pli|candidature|proposition",
            "date|heure limite",
        ),
        # "Дата и время окончания подачи заявок", "Кінцевий строк подання тендерних
        # пропозицій", "Срок за получаване на оферти".
        "cyrl": (
            "окончан|окончател|срок|строк|дата|кінцев|краи подач|подан|подаван|прием|представлен"
            "|предоставлен|получаван заяв|предложен|оферт|пропозиц",
        ),
    },
    # An amount that estimates the contract's (or, in a lot's block, the lot's) worth.
    "value": {
        "en": (
            "value",
            "budget",
            "estimate|estimation",
            "worth",
            "spend",
            "estimat|total|overall|approximat|indicative|expected|anticipat|maximum|contract"
            " amount|cost",
        ),
        "de": ("*wert", "*schatz", "*budget", "*volumen"),
        "fr": ("valeur", "montant", "estimation", "budget"),
        # "Начальная (максимальная) цена договора", "Сумма, выделенная для закупки",
        # "Очікувана вартість", "Прогнозна стойност".
        "cyrl": (
            "начальн|максимальн|ожидаем|очікуван|планируем|выделен|прогнозн|оценочн|общ"
            " цен|стоимост|сумм|вартіст|стоиност|бюджет",
            "=нмцк",
        ),
    },
}

BLOCKERS: dict[str, tuple[str, ...]] = {
    "title": (
        # Whoever answers the tender: "Name of contractor" is no title.
        "contractor",
        "tenderer",
        "bidder",
        "supplier",
        "lot",
        "=los",
        "=loses",
        "cpv",
        "code",
        "authorit",
        "entit",
        "buyer",
        "purchaser",
        "*auftraggeber",
        "acheteu",
        "adjudicat",
        "organi",
        "stelle",
        "*nummer",
        "number",
        "numero",
        "reference",
        "date",
        "datum",
        "*wert",
        "value",
        "montant",
        "лот",
        "номер",
        "дата",
        "срок",
        "сумм",
        "цен",
        "стоимост",
        "заказчик",
        "организатор",
    ),
    "authority": (
        "review",
        "appeal",
        "complaint",
        "mediat",
        "support",
        "helpdesk",
        "technical",
        "portal",
        "platform",
        "recours",
        "tribunal",
        "assistance",
        "profil",
        "plateforme",
        "*nachprufung",
        "*kammer",
        "*plattform",
        "reference",
        "=ref",
        "numero",
        "*nummer",
        "number",
        "=id",
        "mail",
        "=e",
        "courriel",
        "telephone",
        "phone",
        "fax",
        "contact",
        "ansprech",
        "correspondant",
        "*zeichen",
        # A buyer's address, contacts, bank details, representative or requirements.
        "адрес",
        "телефон",
        "почт",
        "контакт",
        "реквизит",
        "представител",
        "требовани",
        "жалоб",
        "номер",
    ),
    "reference": (
        "notice",
        "publication",
        "published",
        "ocid",
        "avis",
        "annonce",
        "*bekanntmachung",
        "*veroffentlich",
        "=ted",
        "phone",
        "telephone",
        "=tel",
        "*telefon",
        "fax",
        "vat",
        "tva",
        "ust",
        "*steuer",
        "siret",
        "siren",
        "registration",
        "company",
        "cpv",
        "lot",
        "=los",
        "*hausnummer",
        "iban",
        "account",
        "postcode",
        "zip",
        "*postleitzahl",
        "later",
        "submi",
        "deadline",
        "date",
        # A notice's publication number, a lot's number, a phone, a tax or company number.
        "извещени",
        "объявлени",
        "публикаци",
        "лот",
        "телефон",
        "=инн",
        "=бин",
        "=бик",
        "счет",
        "дата",
        "срок",
    ),
    "deadline": (
        "question",
        "clarif",
        "enquir",
        "inquir",
        "quer",
        "information",
        "opening",
        "opened",
        "award",
        "publication",
        "published",
        "issued",
        "dispatch",
        "visit",
        "conference",
        "meeting",
        "standstill",
        "valid",
        "interest",
        "start",
        "commence",
        "complet",
        "duration",
        "*frage",
        "*bindefrist",
        "binde",
        "*zuschlag",
        "*offnung",
        "*submissionstermin",
        "*submissionsdatum",
        "stelle",
        "*veroffentlich",
        "*bekanntmachung",
        "absend",
        "*ausfuhrung",
        "beginn",
        "*laufzeit",
        "*besichtig",
        "renseignement",
        "ouverture",
        "envoi",
        "publie",
        "mise",
        "validite",
        "visite",
        "attribution",
        "demarrage",
        "debut",
        "execution",
        "duree",
        # Clarifications, opening, evaluation, publication, validity, start, delivery.
        "разъяснен",
        "роз",
        "вскрыт",
        "рассмотрен",
        "итог",
        "опубликов",
        "размещен",
        "деистви",  # "действия", folded
        "начал",
        "исполнен",
        "выполнен",
        "поставк",
        "отзыв",
        "обеспечен",
    ),
    "value": (
        "turnover",
        "revenue",
        "insurance",
        "liabilit",
        "bond",
        "guarantee",
        "deposit",
        "securit",
        "gross",
        "including",
        "incl",
        "similar",
        "previous",
        "past",
        "experience",
        "penalt",
        "fee",
        "minimum",
        "*umsatz",
        "*brutto",
        "inkl",
        "einschl",
        "*burgschaft",
        "*sicherheit",
        "*mehrwert",
        "*bewert",
        "*wertung",
        "mindest",
        "chiffre",
        "affaires",
        "caution",
        "garantie",
        "retenue",
        "ttc",
        "toutes",
        "minimal",
        "*referenz",
        "referen",
        # A bid or performance security, a guarantee, a value including VAT, a penalty.
        "обеспечен",
        "забезпечен",
        "гаранти",
        "гаранці",
        "=учетом",
        "=включая",
        "=включно",
        "штраф",
        "неустоик",
        "пен",
        "оборот",
    ),
}


def _word_set(*groups: str) -> frozenset[str]:
    return frozenset(word for group in groups for word in group.split())


#: Words a label may hold between its roots ("Date limite *de* dépôt *des* offres", "Angebote
#: *sind* einzureichen *bis*", "Bids *must be* submitted *no later than*").
CONNECTORS = _word_set(
    "of the for and to by at on in no later than be must shall will are is a an or with this s",
    "de du des la le les l d et au aux plus tard en pour par sur",
    "и в на для по до за о об к с та і з",
    "der die das den dem und fur zur zum bis sind ist spatestens am um von im",
)

#: Articles and the like, after which a label goes on: "Bezeichnung der Maßnahme", "Name of
#: the buyer" (a label never ends with one).
ARTICLES = _word_set("der des die das dem den eines einer of the du de la le les l d")

#: Words that sit inside labels without naming a field by themselves: what a number, a title or
#: a value is of ("Gegenstand *des Auftrags*", "Numéro *du marché*").
QUALIFIERS = _word_set(
    "contract tender procurement project notice call procedure framework",
    "auftrag auftrags ausschreibung vergabe leistung leistungen verfahren verfahrens angebote",
    "marche consultation offres plis dossier",
    "закупки закупок закупівлі тендера конкурса аукциона договора поръчката",
)

#: Words that mark the lot a label speaks of: a value under such a label is the lot's.
LOT_WORDS = ("lot", "=los", "=loses", "*loswert", "=lose", "лот")
